/**
 * One 'abort' listener per signal, however many waits share it: hundreds of pushes waiting on
 * one shutdown signal would otherwise add hundreds of listeners (and Node's leak warning).
 */
export class AbortRegistry {
  private readonly callbacks = new WeakMap<AbortSignal, Set<() => void>>();

  /** Call fn once when signal aborts; returns the function that cancels this. */
  on(signal: AbortSignal, fn: () => void): () => void {
    let set = this.callbacks.get(signal);
    if (set === undefined) {
      const fresh = new Set<() => void>();
      set = fresh;
      this.callbacks.set(signal, fresh);
      signal.addEventListener('abort', () => [...fresh].forEach((f) => f()), { once: true });
    }
    const registered = set;
    registered.add(fn);
    return () => registered.delete(fn);
  }
}

export const abortRegistry = new AbortRegistry();
