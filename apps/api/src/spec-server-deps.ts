import { createAppCredentialStore, createAudienceStore } from '@herald/db';
import type { Logger } from '@herald/logging';
import { Registry } from '@herald/runtime';
import type { TestDatabase } from '@herald/testing';
import { createJobRecords } from './job-records.ts';
import type { ApiServerDeps } from './server.ts';

/** For this app's specs only: a dependency the spec does not reach. */
const notHere = (): Promise<never> => Promise.reject(new Error('not used by this spec'));

/**
 * For this app's specs only: the API server's dependencies on a test database, as main.ts wires
 * them where a spec needs them (jobs, apps, keys, preferences, audiences, subscriptions, admin
 * store), the rest refusing; `overrides` replaces any of them.
 */
export function specServerDeps(t: TestDatabase, logger: Logger, overrides: Partial<ApiServerDeps> = {}): ApiServerDeps {
  return {
    // Made only when not given: one holds the marks it writes in the background (flush them at the end).
    jobs: overrides.jobs ?? createJobRecords(t.db.jobs, logger),
    apps: t.db.apps,
    webDevices: { get: () => Promise.resolve(false) },
    publish: notHere,
    publishRegistration: notHere,
    publishChange: notHere,
    subscriptions: t.db.subscriptions,
    resourceTypes: ['campaign'],
    allowHttpLocalhost: false,
    maxSubscriptionsPerTeam: 10,
    maxChangeBytes: 10_000,
    cancel: notHere,
    preferences: t.db.preferences,
    audiences: createAudienceStore(t.db.kysely),
    userDevices: notHere,
    eraseUser: notHere,
    keys: t.db.apiKeys,
    admin: {
      store: createAppCredentialStore(t.db.kysely, undefined),
      list: notHere,
      keys: t.db.apiKeys,
      audit: t.db.audit,
      generateVapidKeys: notHere,
    },
    vapidApps: t.db.apps,
    adminKey: undefined,
    bodyLimitBytes: 1_000_000,
    maxBodyBytesInFlight: 32 * 1024 * 1024,
    requestTimeoutMs: 10_000,
    keyCacheTtlMs: 1_000,
    logger,
    registry: new Registry(),
    ...overrides,
  };
}
