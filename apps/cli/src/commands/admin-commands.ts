import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import { readCliConfig } from '../cli-config.ts';
import { printRows } from '../output.ts';

export function registerAdminCommands(program: Command): void {
  // `herald apps ...` lives in app-commands.ts; opt-out, mute, opt-outs, mutes and devices in preference-commands.ts.
  const sandbox = program.command('sandbox').description('the local APNs/FCM sandboxes');
  sandbox
    .command('records')
    .description('what the sandboxes received, newest last')
    .option('--platform <platform>', 'apns or fcm')
    .option('--token <token>', 'only this device token')
    .option('--limit <n>', 'at most this many', '20')
    .option('--json', 'print the full requests as JSON')
    .action(async (o: { platform?: string; token?: string; limit: string; json?: boolean }) => {
      const settings = JSON.parse(await readFile(join(readCliConfig().SANDBOX_STATE_DIR, 'sandbox.json'), 'utf8')) as {
        control: { url: string };
      };
      const query = new URLSearchParams({ limit: o.limit, ...(o.platform && { platform: o.platform }), ...(o.token && { token: o.token }) });
      const res = await fetch(`${settings.control.url}/records?${query}`);
      const records = (await res.json()) as Array<Record<string, unknown>>;
      if (o.json === true) printRows(records, true);
      else printRows(records.map((r) => ({ seq: r['seq'], platform: r['platform'], at: r['receivedAt'], status: r['status'], path: r['path'], body: r['body'] })), false);
    });
}
