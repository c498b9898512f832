type Waiter = { wake: () => void; giveUp: () => void };
type Host = { active: number; waiting: Waiter[] };

export interface HostSlotLimits {
  /** Concurrent requests per host. */
  perHost: number;
  /** Requests that may wait for a healthy host. */
  maxQueued: number;
  /** Requests that may wait for a host marked slow (its last request timed out or could not connect). */
  maxQueuedWhenSlow: number;
}

/**
 * A bounded number of concurrent requests per destination host: a slow or hanging host only
 * ever occupies its own slots. A bounded number of requests wait for a host — few once it is
 * known to be slow, so a hanging host cannot tie up the consumer's prefetch; beyond that (or
 * when `signal` fires first) acquire gives up and the caller defers the delivery.
 */
export class HostSlots {
  private readonly hosts = new Map<string, Host>();
  /** Slow hosts, each with when it turned slow. */
  private readonly slow = new Map<string, number>();

  constructor(
    private readonly limits: HostSlotLimits,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** A release function once a slot is free; undefined when the host's queue is full or signal fired. */
  acquire(host: string, signal?: AbortSignal): Promise<(() => void) | undefined> {
    const h = this.hosts.get(host) ?? { active: 0, waiting: [] };
    this.hosts.set(host, h);
    if (h.active < this.limits.perHost) {
      h.active++;
      return Promise.resolve(this.releaser(host, h));
    }
    if (h.waiting.length >= this.queueLimit(host) || signal?.aborted === true) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        wake: () => {
          signal?.removeEventListener('abort', waiter.giveUp);
          h.active++;
          resolve(this.releaser(host, h));
        },
        giveUp: () => {
          signal?.removeEventListener('abort', waiter.giveUp);
          h.waiting = h.waiting.filter((w) => w !== waiter);
          resolve(undefined);
        },
      };
      h.waiting.push(waiter);
      signal?.addEventListener('abort', waiter.giveUp, { once: true });
    });
  }

  /** After each request: a host that timed out or refused is slow until it answers in time again. */
  noteSpeed(host: string, slow: boolean): void {
    if (!slow) {
      this.slow.delete(host);
      return;
    }
    if (this.slow.size > 10_000) this.slow.clear();
    if (!this.slow.has(host)) this.slow.set(host, this.now());
    const h = this.hosts.get(host);
    // Waiters beyond the slow host's allowance give up now rather than after a timeout each.
    for (const w of h?.waiting.slice(this.limits.maxQueuedWhenSlow) ?? []) w.giveUp();
  }

  /** How long since the host's request timed out or could not connect with none answered in time since; undefined when it is not slow. */
  slowForMs(host: string): number | undefined {
    const since = this.slow.get(host);
    return since === undefined ? undefined : this.now() - since;
  }

  /** Requests in flight to a host (metrics, tests). */
  active(host: string): number {
    return this.hosts.get(host)?.active ?? 0;
  }

  private queueLimit(host: string): number {
    return this.slow.has(host) ? this.limits.maxQueuedWhenSlow : this.limits.maxQueued;
  }

  private releaser(host: string, h: Host): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      h.active--;
      const next = h.waiting.shift();
      if (next !== undefined) next.wake();
      else if (h.active === 0) this.hosts.delete(host);
    };
  }
}
