// Best-effort waits for a provider's first connection and token, bounded, never failing: what fails is left to the first send.
import type http2 from 'node:http2';

/** Resolves once `session` has connected, failed or closed, or after `timeoutMs`; never rejects. */
export function settledWithin(session: http2.ClientHttp2Session, timeoutMs: number): Promise<void> {
  if (!session.connecting || session.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      session.off('connect', done).off('error', done).off('close', done);
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    session.once('connect', done).once('error', done).once('close', done);
  });
}

/** Waits for `work` at most `timeoutMs`; its failure is ignored here (whoever needs its result meets it). */
export async function waitAtMost(work: Promise<unknown>, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
  await Promise.race([
    work.then(
      () => undefined,
      () => undefined,
    ),
    timedOut,
  ]);
  clearTimeout(timer);
}
