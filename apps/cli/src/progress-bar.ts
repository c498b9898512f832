/** A one-line progress bar on stderr for long operations; plain lines when stderr is not a terminal. */
export function progressBar(label: string): { update(done: number, total: number, detail: string): void; finish(): void } {
  const tty = process.stderr.isTTY === true;
  let lastLine = 0;
  let drawn = false;
  return {
    update(done, total, detail) {
      const ratio = total === 0 ? 1 : Math.min(1, done / total);
      drawn = true;
      if (tty) {
        const width = 30;
        const filled = Math.round(ratio * width);
        process.stderr.write(`\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${Math.round(ratio * 100)}% ${detail}`);
      } else if (Date.now() - lastLine >= 1_000 || done === total) {
        lastLine = Date.now();
        process.stderr.write(`${label}: ${done}/${total} ${detail}\n`);
      }
    },
    finish() {
      if (tty && drawn) process.stderr.write('\n');
    },
  };
}
