import { readFileSync } from 'node:fs';
import { bool, commonConfig, int, intList, ledgerRetentionConfig, pushPackConfig, str, type VarSpec } from '@herald/config';
import { caPemProblem, hostProblem, parseProxyUrl, portProblem } from '@herald/contracts';
import { appDeliveryConfig } from './app-delivery.ts';
import type { CaFile } from './provider-connection.ts';
import { DEFAULT_PREFERENCES_RECHECK_MS } from './pusher.ts';

/** An optional variable (unset or empty: undefined) whose value `check` turns into T or refuses with a sentence. */
const optional = <T>(description: string, check: (raw: string) => T, secret = false): VarSpec<T | undefined> => ({
  description,
  default: '',
  secret,
  parse: (raw) => (raw.trim().length === 0 ? undefined : check(raw.trim())),
});

const fail = (problem: string | undefined): void => {
  if (problem !== undefined) throw new Error(problem);
};

/** A provider host name or IP address. */
export const hostVar = (description: string): VarSpec<string | undefined> => optional(description, (raw) => (fail(hostProblem(raw)), raw));

/** A TCP port, optional. */
export const portVar = (description: string): VarSpec<number | undefined> =>
  optional(description, (raw) => {
    if (!/^\d+$/.test(raw)) throw new Error(`must be a port from 1 to 65535, got "${raw}"`);
    fail(portProblem(Number(raw)));
    return Number(raw);
  });

/** A PEM CA bundle file, read and checked at start-up (so a missing or broken file is reported with the other settings). */
export const caFileVar = (description: string): VarSpec<CaFile | undefined> =>
  optional(description, (path) => {
    let pem: string;
    try {
      pem = readFileSync(path, 'utf8');
    } catch (err) {
      throw new Error(`cannot be read: ${(err as Error).message}`, { cause: err });
    }
    const problem = caPemProblem(pem);
    if (problem !== undefined) throw new Error(`${path}: ${problem}`);
    return { path, pem };
  });

/** An HTTPS_PROXY-style URL http://[user:password@]host:port (secret: it may carry a password). */
export const proxyUrlVar = (description: string): VarSpec<string | undefined> =>
  optional(
    description,
    (raw) => {
      const parsed = parseProxyUrl(raw);
      if (!parsed.ok) throw new Error(parsed.reason);
      return raw;
    },
    true,
  );

/** What every pusher (APNs, FCM, webhook) shares: batching, retries, the ledger, the fleet rate limit. */
export const sharedPusherConfig = {
  PUSHER_PREFETCH: int('Unacknowledged pushes a pusher holds at once', { default: '500', min: 1 }),
  PUSHER_BATCH_SIZE: int('Pushes claimed in the ledger together (one query per batch)', { default: '100', min: 1 }),
  PUSHER_BATCH_WAIT_MS: int('How long a batch waits to fill while pushes keep coming (a push after a quiet spell goes at once)', { default: '10', min: 0 }),
  PUSHER_RETRY_DELAYS_MS: intList('Retry schedule for transient provider failures: delay before each attempt, in ms', {
    default: '1000,5000,30000,120000,600000',
  }),
  LEDGER_LEASE_MS: int('How long a ledger claim protects a push after its pusher last renewed it (every third of a lease while the batch works) before another pusher may take it over', {
    default: '30000',
    min: 1000,
  }),
  LEDGER_PRUNE_INTERVAL_MS: int('How often pushers prune the delivery ledger (one pusher at a time, under an advisory lock)', {
    default: '3600000',
    min: 1000,
  }),
  ...ledgerRetentionConfig,
  RATE_LIMIT_ENABLED: bool('Pace sends by the fleet-wide budgets set with `herald limits set` (false: no limiter at all)', { default: 'true' }),
  RATE_LIMIT_MAX_WAIT_MS: int('Longest a push waits for budget before it is deferred (keep far below the broker consumer timeout)', {
    default: '20000',
    min: 100,
    max: 600000,
  }),
  RATE_LIMIT_MAX_SLICE: int('Most tokens one lease from the shared budget takes (a 100 ms window\'s share caps it too)', { default: '1000', min: 1 }),
  RATE_LIMIT_REFRESH_MS: int('How often configured limits and the provider pauses other pushers recorded are re-read (changes take effect within this)', { default: '1000', min: 100 }),
} as const;

/** Unset: the send window (windowFor). */
const devicePrefetch = optional('Pushes a pusher sends at once, and RabbitMQ messages it holds (unset: PUSHER_BATCH_SIZE × 2). A message may carry up to PUSH_PACK_SIZE pushes: those beyond this many wait in the process until earlier ones are answered. A pusher sends at most this many pushes a provider round trip: size it to the rate one pusher should reach × the round trip to Apple or Google (200 pushes, 100 ms: 2,000/s at most)', (raw) => {
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new Error(`must be a whole number of at least 1, got "${raw}"`);
  return Number(raw);
});

/**
 * A device pusher's window: the pushes it works on at once (by default two batches, one being sent
 * while the next is claimed), and its prefetch in messages. Packed messages (ADR 0016) bring up to
 * PUSH_PACK_SIZE pushes each, so the process may hold that many times the window, but the consumer
 * starts no more than the window at once (`maxInFlight`), however full the packs are. The window
 * bounds the pushes in flight, so a pusher sends at most a window's worth a provider round trip:
 * with the sandbox holding every answer 200 ms (`BENCH_PROVIDER_DELAY_MS=200 npm run bench`), 892
 * pushes/s a pusher by default, CPU-bound at 600. Against a provider that answers at once, a larger
 * one only queues pushes inside the process (their buffers, requests and promises outlive young GC
 * generations and swell the heap) instead of in RabbitMQ, without sending any faster.
 */
export const windowFor = (settings: { PUSHER_PREFETCH: number | undefined; PUSHER_BATCH_SIZE: number }): number =>
  settings.PUSHER_PREFETCH ?? settings.PUSHER_BATCH_SIZE * 2;

/** Settings the device pushers (APNs, FCM, Web Push) share; each pusher adds its provider's credentials. */
export const pusherConfig = {
  ...commonConfig,
  ...sharedPusherConfig,
  PUSHER_PREFETCH: devicePrefetch,
  ...pushPackConfig,
  APP_CACHE_TTL_MS: int('How long app settings are cached', { default: '5000', min: 0 }),
  PREFERENCES_RECHECK_AFTER_MS: int("A push whose user's opt-outs and mutes were read longer ago than this (when the demuxer made it, or it fell due) has them, and its job's cancel, asked again before it is sent: one replayed from a parked queue, or held back by its app's budget or a pause (0: every push)", {
    default: String(DEFAULT_PREFERENCES_RECHECK_MS),
    min: 0,
    comparedOnly: true,
  }),
  PROVIDER_DOWN_HOLD_MS: int("How long after it was due a push is held while its provider is taken to be down (a lane's fresh sends got no answer or a server error: the last PROVIDER_DOWN_MIN_SENDS in a row, over 90% of the minute's, for PROVIDER_DOWN_AFTER_MS or more): not sent, no attempt spent, until the provider answers; past it, parked as provider-down, to be replayed (0: never held; tried on PUSHER_RETRY_DELAYS_MS and parked when it runs out)", {
    default: String(24 * 3_600_000),
    min: 0,
  }),
  PROVIDER_DOWN_PROBE_MS: int('How often one push tries a provider lane taken to be down (its answer brings the lane back up)', { default: '30000', min: 1000 }),
  PROVIDER_DOWN_MIN_SENDS: int("Fresh sends of a provider lane (pushes never sent before) failing within a minute before the lane can be taken down (fewer: each push is retried and parked on its own)", { default: '10', min: 1 }),
  PROVIDER_DOWN_AFTER_MS: int("How long a provider lane's fresh sends must have been failing before it is taken down (one dropped connection's burst of failures is no outage: those pushes are retried)", { default: '5000', min: 0 }),
  ...appDeliveryConfig,
  SANDBOX_STATE_DIR: str('Where the sandbox keeps its certificate, keys and sandbox.json (used when no credentials are set)', {
    default: '.herald/sandbox',
  }),
} as const;
