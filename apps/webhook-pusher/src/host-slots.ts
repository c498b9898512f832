type Host = { active: number; waiting: Array<() => void> };

/**
 * A bounded number of concurrent requests per destination host: a slow or hanging host only
 * ever occupies its own slots. At most `maxQueued` requests wait for a host; beyond that (or when
 * `signal` fires first) acquire gives up, and the caller defers the delivery instead of holding
 * the consumer's prefetch.
 */
export class HostSlots {
  private readonly hosts = new Map<string, Host>();

  constructor(
    private readonly perHost: number,
    private readonly maxQueued: number,
  ) {}

  /** A release function once a slot is free; undefined when the host's queue is full or signal fired. */
  acquire(host: string, signal?: AbortSignal): Promise<(() => void) | undefined> {
    const h = this.hosts.get(host) ?? { active: 0, waiting: [] };
    this.hosts.set(host, h);
    if (h.active < this.perHost) {
      h.active++;
      return Promise.resolve(this.releaser(host, h));
    }
    if (h.waiting.length >= this.maxQueued || signal?.aborted === true) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const wake = (): void => {
        signal?.removeEventListener('abort', giveUp);
        h.active++;
        resolve(this.releaser(host, h));
      };
      const giveUp = (): void => {
        h.waiting = h.waiting.filter((w) => w !== wake);
        resolve(undefined);
      };
      h.waiting.push(wake);
      signal?.addEventListener('abort', giveUp, { once: true });
    });
  }

  /** Requests in flight to a host (metrics, tests). */
  active(host: string): number {
    return this.hosts.get(host)?.active ?? 0;
  }

  private releaser(host: string, h: Host): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      h.active--;
      const next = h.waiting.shift();
      if (next !== undefined) next();
      else if (h.active === 0) this.hosts.delete(host);
    };
  }
}
