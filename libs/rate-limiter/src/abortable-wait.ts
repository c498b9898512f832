import { abortRegistry } from './abort-registry.ts';

/** Resolves true after ms, or false as soon as any of the signals aborts (at once if one has). */
export function abortableWait(ms: number, ...signals: Array<AbortSignal | undefined>): Promise<boolean> {
  const live = signals.filter((s): s is AbortSignal => s !== undefined);
  if (live.some((s) => s.aborted)) return Promise.resolve(false);
  return new Promise((resolve) => {
    const finish = (ok: boolean): void => {
      clearTimeout(timer);
      cancels.forEach((cancel) => cancel());
      resolve(ok);
    };
    const timer = setTimeout(() => finish(true), Math.max(0, ms));
    const cancels = live.map((s) => abortRegistry.on(s, () => finish(false)));
  });
}
