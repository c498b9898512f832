/**
 * Web pushes/s from the Web Push provider to the sandbox's push service: encrypt (aes128gcm),
 * sign (VAPID, reused per origin), POST over keep-alive TLS, the sandbox verifying and
 * decrypting each. Run by `npm run bench` (after the end-to-end runs) and alone with
 * `npm run bench:web` (WEB_BENCH_SECONDS, WEB_BENCH_CONCURRENCY, WEB_BENCH_SUBSCRIPTIONS).
 */
import { createECDH } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { derivePushId, type DevicePush } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { createWebPushProvider, loadSandboxWebTrust } from '@herald/providers';
import { startSandbox } from '@herald/sandbox';

export interface WebBenchResult {
  webPushesPerSecond: number;
  sent: number;
  failed: number;
  /** The first failed send's result, so a run that fails says why. */
  firstFailure?: string;
  concurrency: number;
  seconds: number;
}

/** ", first failure: …" when sends failed, for the printed line. */
export const failureNote = (r: WebBenchResult): string => (r.firstFailure === undefined ? '' : `; first failure: ${r.firstFailure}`);

export async function benchWebProvider(options: { seconds: number; concurrency: number; subscriptions: number }): Promise<WebBenchResult> {
  const logger = createLogger({ service: 'web-bench', level: 'warn', format: 'json' });
  const stateDir = await mkdtemp(join(tmpdir(), 'herald-web-bench-'));
  const sandbox = await startSandbox({ stateDir, logger, maxRecords: 10_000 });
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const current = { publicKey: ecdh.getPublicKey().toString('base64url'), privateKey: ecdh.getPrivateKey().toString('base64url') };
  const provider = await createWebPushProvider(
    { vapid: { subject: 'mailto:bench@example.com', current }, trusted: await loadSandboxWebTrust(stateDir), requestTimeoutMs: 10_000, maxSockets: options.concurrency },
    logger,
  );
  try {
    const subs = await Promise.all(
      Array.from({ length: options.subscriptions }, async () => {
        const res = await fetch(`${sandbox.settings.control.url}/web/subscriptions`, { method: 'POST', body: JSON.stringify({ applicationServerKey: current.publicKey }) });
        return (await res.json()) as { endpoint: string; keys: { p256dh: string; auth: string } };
      }),
    );
    let n = 0;
    let sent = 0;
    let failed = 0;
    let firstFailure: string | undefined;
    const until = Date.now() + options.seconds * 1000;
    const worker = async (): Promise<void> => {
      while (Date.now() < until) {
        const i = n++;
        const sub = subs[i % subs.length] as (typeof subs)[number];
        const push: DevicePush = {
          version: 1, pushId: derivePushId('web-bench', String(i)), jobId: 'web-bench', deviceId: String(i), app: 'bench', platform: 'web',
          token: sub.endpoint, webKeys: sub.keys, userId: 'u', content: { title: 'bench', body: 'web push', data: { t: String(Date.now()) } },
          priority: 'normal', acceptedAt: new Date().toISOString(),
        };
        const result = await provider.send(push, {});
        if (result.kind === 'delivered') sent++;
        else {
          failed++;
          firstFailure ??= JSON.stringify(result).slice(0, 300);
        }
      }
    };
    const started = Date.now();
    await Promise.all(Array.from({ length: options.concurrency }, worker));
    const seconds = (Date.now() - started) / 1000;
    return { webPushesPerSecond: Math.round(sent / seconds), sent, failed, ...(firstFailure !== undefined && { firstFailure }), concurrency: options.concurrency, seconds: options.seconds };
  } finally {
    await provider.close();
    await sandbox.close();
    await rm(stateDir, { recursive: true, force: true });
  }
}

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
export const webBenchOptions = () => ({ seconds: env('WEB_BENCH_SECONDS', 10), concurrency: env('WEB_BENCH_CONCURRENCY', 32), subscriptions: env('WEB_BENCH_SUBSCRIPTIONS', 100) });

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await benchWebProvider(webBenchOptions());
  console.log(`web provider → sandbox push service: ${r.webPushesPerSecond} web pushes/s (${r.sent} delivered, ${r.failed} failed, concurrency ${r.concurrency}, ${r.seconds} s${failureNote(r)})`);
}
