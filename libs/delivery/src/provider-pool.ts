import type { Platform } from '@herald/contracts';
import type { AppRow } from '@herald/db';
import type { Logger } from '@herald/logging';
import type { PushProvider } from '@herald/providers';

/** Where the pusher gets the provider for a push's app. */
export interface ProviderSource {
  get(app: AppRow): Promise<PushProvider>;
  close(): Promise<void>;
}

/** One provider for every app (the process-level settings, or a test double). */
export function singleProvider(provider: PushProvider): ProviderSource {
  return { get: () => Promise.resolve(provider), close: () => provider.close() };
}

export interface ProviderPoolOptions {
  platform: Platform;
  /** The process-level provider (environment credentials or the sandbox), for apps with no credentials of their own. */
  fallback: () => Promise<PushProvider>;
  /** Whether the app has stored credentials for this pusher's platform. */
  hasOwn: (app: AppRow) => boolean;
  /** Build a provider from the app's stored credentials. */
  build: (app: AppRow) => Promise<PushProvider>;
  /** Close an app's provider after this long without a send. */
  idleMs: number;
  logger: Logger;
  /** How long a failed build is remembered before the next push tries again. */
  failureTtlMs?: number;
  now?: () => number;
}

interface Entry {
  app: string;
  version: number;
  provider: Promise<PushProvider>;
  /** The provider once built, counting in-flight sends and stamping lastUsed around each. */
  tracked?: PushProvider;
  lastUsed: number;
  inFlight: number;
}

export interface ProviderPool extends ProviderSource {
  /** Close providers idle for idleMs, and replaced ones once their sends have finished. */
  sweep(): Promise<void>;
  /** App ids with an open provider (for tests and logs). */
  apps(): string[];
}

function track(e: Entry, provider: PushProvider, platform: Platform, now: () => number): PushProvider {
  const prepare = provider.prepare?.bind(provider);
  return {
    platform,
    // Its checks (no request, nothing in flight): the provider's own, as it is.
    ...(prepare !== undefined && { prepare }),
    async send(push, target, prepared, stale) {
      e.inFlight += 1;
      try {
        return await provider.send(push, target, prepared, stale);
      } finally {
        e.inFlight -= 1;
        e.lastUsed = now();
      }
    },
    close: () => Promise.resolve(),
  };
}

/**
 * One provider per app, built on demand from the app's credentials (apps without any share the
 * fallback), rebuilt when the app's credentialsVersion moves, closed when idle. A provider keeps
 * its connection and its APNs provider token, so tokens are reused across requests.
 */
export function createProviderPool(options: ProviderPoolOptions): ProviderPool {
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();
  const retired: Entry[] = [];
  let fallback: Promise<PushProvider> | undefined;
  const log = options.logger.child({ component: 'provider-pool' });

  const closeEntry = async (e: Entry, why: string): Promise<void> => {
    try {
      await (await e.provider).close();
      log.info({ app: e.app, version: e.version, why }, 'app provider closed');
    } catch (err) {
      log.debug({ err, app: e.app }, 'app provider close failed (it never opened)');
    }
  };

  const open = (app: AppRow, version: number): Entry => {
    const provider = options.build(app);
    const entry: Entry = { app: app.id, version, provider, lastUsed: now(), inFlight: 0 };
    provider.then(
      () => log.info({ app: app.id, version }, 'app provider opened'),
      (err: unknown) => {
        log.warn({ err, app: app.id, version }, 'app provider could not be built');
        setTimeout(() => entries.get(app.id) === entry && entries.delete(app.id), options.failureTtlMs ?? 5000).unref();
      },
    );
    entries.set(app.id, entry);
    return entry;
  };

  const sweep = async (): Promise<void> => {
    const at = now();
    const idle = [...entries.values()].filter((e) => e.inFlight === 0 && at - e.lastUsed >= options.idleMs);
    for (const e of idle) entries.delete(e.app);
    const done = retired.filter((e) => e.inFlight === 0);
    retired.splice(0, retired.length, ...retired.filter((e) => e.inFlight > 0));
    await Promise.all([...idle.map((e) => closeEntry(e, 'idle')), ...done.map((e) => closeEntry(e, 'credentials changed'))]);
  };
  const timer = setInterval(() => void sweep(), Math.max(100, Math.min(options.idleMs / 2, 30_000)));
  timer.unref();

  return {
    sweep,
    apps: () => [...entries.keys()],
    async get(app) {
      if (!options.hasOwn(app)) return (fallback ??= options.fallback());
      const version = app.credentialsVersion ?? 0;
      let entry = entries.get(app.id);
      if (entry !== undefined && entry.version !== version) {
        retired.push(entry);
        entry = undefined;
      }
      entry ??= open(app, version);
      entry.lastUsed = now();
      const provider = await entry.provider;
      return (entry.tracked ??= track(entry, provider, options.platform, now));
    },
    async close() {
      clearInterval(timer);
      const all = [...entries.values(), ...retired.splice(0)];
      entries.clear();
      await Promise.all([...all.map((e) => closeEntry(e, 'shutdown')), fallback?.then((p) => p.close(), () => undefined)]);
    },
  };
}
