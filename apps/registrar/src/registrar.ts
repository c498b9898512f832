import { decodeWith, endpointHostProblem, normalizeDeviceToken, Registration } from '@herald/contracts';
import { isDatabaseUnavailable, refusedValueReason, type AppRow, type DeviceRepository } from '@herald/db';
import type { Logger } from '@herald/logging';
import { Counter, type Registry } from '@herald/runtime';
import { applyMembershipEvents, isMembershipMessage, type MembershipDeps } from './membership-events.ts';

// Minimal structural types; @herald/messaging exports identical shapes.
interface InboundMessage {
  body: Buffer;
  headers: Record<string, unknown>;
  routingKey: string;
  redelivered: boolean;
  attempt: number;
  queue: string;
}
type Outcome =
  | { kind: 'ack' }
  | { kind: 'retry'; code: string; reason: string; delayMs?: number }
  | { kind: 'park'; code: string; reason: string }
  | { kind: 'defer'; code: string; reason: string; delayMs: number };

export interface RegistrarDeps {
  devices: DeviceRepository;
  /** Topic memberships and follow edges (issue 20); see membership-events.ts. */
  audiences?: MembershipDeps['audiences'];
  apps: { get(id: string): Promise<AppRow | undefined> };
  logger: Logger;
  /** Where herald_registrations_total is registered (the service's registry). */
  registry?: Registry;
}

type Decoded = { index: number; reg: Registration };

const ACK: Outcome = { kind: 'ack' };

type Park = Extract<Outcome, { kind: 'park' }>;

type Decode = { ok: true; reg: Registration; dropped?: string } | { ok: false; park: Park };

/**
 * Fields a registration can lose without losing the device: the token still gets its pushes, and
 * the device keeps the zone, language, app version and last-seen time it had (in UTC, default
 * language if none). An Android versionName such as "2.3.1 (45)" had parked every register of the
 * device, its token with it.
 */
const DROPPABLE = ['timezone', 'locale', 'appVersion', 'lastSeenAt'] as const;

/**
 * A registration whose only problems are its timezone, locale, app version or last-seen time is applied without them (and the
 * drop is logged with the reason): parking it would lose the device token, and with it every push
 * to that device. Without them the device keeps the ones it had (applyRegistrations). The HTTP API
 * refuses such a registration with a 400 instead, so its caller can fix it.
 */
function withoutBadFields(body: Buffer, reason: string): Decode | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  const first = Registration.safeParse(raw);
  if (first.success || typeof raw !== 'object' || raw === null) return undefined;
  const fields = new Set(first.error.issues.map((i) => i.path[0]));
  if (![...fields].every((f) => (DROPPABLE as readonly unknown[]).includes(f))) return undefined;
  const trimmed = Object.fromEntries(Object.entries(raw).filter(([k]) => !fields.has(k)));
  const again = Registration.safeParse(trimmed);
  return again.success ? { ok: true, reg: again.data, dropped: reason } : undefined;
}

function decode(message: InboundMessage): Decode {
  const parsed = decodeWith(Registration, message.body);
  const result: Decode | undefined = parsed.ok ? { ok: true, reg: parsed.value } : withoutBadFields(message.body, parsed.reason);
  // One spelling per token: APNs hex is stored in lower case.
  if (result?.ok === true) return { ...result, reg: { ...result.reg, token: normalizeDeviceToken(result.reg.platform, result.reg.token) } };
  const reason = parsed.ok ? 'unreachable' : parsed.reason;
  return { ok: false, park: { kind: 'park', code: reason.startsWith('malformed JSON') ? 'malformed-json' : 'schema', reason } };
}

/**
 * Why an app refuses a web register: a push service it does not accept (apps.web_push_hosts).
 * Its applicationServerKey is not judged here: the web-pusher's own WEB_PUSH_VAPID_* pair, which no
 * door knows, signs the subscriptions an app made before it had keys of its own, and their browsers
 * register again naming that key. A key Herald holds no pair for parks its pushes with that reason
 * (web-signing-key.ts).
 */
function webRefusal(reg: Registration, app: AppRow): Park | undefined {
  if (reg.kind !== 'register' || reg.platform !== 'web') return undefined;
  const host = endpointHostProblem(reg.token, app.webPushHosts);
  return host === undefined ? undefined : { kind: 'park', code: 'push-service-not-allowed', reason: `token: ${host}` };
}

/**
 * Why an app cannot take this event: only an unknown app, or a web register its push service
 * refuses. A disabled app's registers and unregisters are applied: they are state, not sends (its
 * jobs and pushes are what park). A logout, or another user's login on the phone, while the app was
 * disabled (an incident) must not leave the device to the user who left it once the app is enabled
 * again.
 */
function refusal(reg: Registration, app: AppRow | undefined): Park | undefined {
  if (app === undefined) return { kind: 'park', code: 'unknown-app', reason: `unknown app "${reg.app}"` };
  return webRefusal(reg, app);
}

/** Looks up each distinct app once; an event its app cannot take is parked (refusal). */
async function checkApps(regs: readonly Decoded[], deps: RegistrarDeps, outcomes: Outcome[]): Promise<Decoded[]> {
  const ids = [...new Set(regs.map((d) => d.reg.app))];
  const apps = new Map(await Promise.all(ids.map(async (id) => [id, await deps.apps.get(id)] as const)));
  const usable: Decoded[] = [];
  for (const d of regs) {
    const refused = refusal(d.reg, apps.get(d.reg.app));
    if (refused === undefined) {
      usable.push(d);
      continue;
    }
    outcomes[d.index] = refused;
    deps.logger.warn({ app: d.reg.app, outcome: refused }, 'registration parked');
  }
  return usable;
}

/**
 * Applies the batch (one statement, one more a round of further events of a device); stale events (older than the device's last, or an unregister
 * naming a user the device no longer belongs to) are acked, and counted as such.
 */
async function apply(valid: readonly Decoded[], deps: RegistrarDeps, outcomes: Outcome[], counted?: Counter<'kind' | 'result'>): Promise<void> {
  const results = await deps.devices.applyRegistrations(valid.map((d) => d.reg));
  valid.forEach(({ index, reg }, i) => {
    outcomes[index] = ACK;
    const result = results[i] ?? 'stale';
    counted?.inc({ kind: reg.kind, result });
    const log = { app: reg.app, platform: reg.platform, kind: reg.kind, eventAt: reg.eventAt, token: reg.token };
    deps.logger.debug(log, result === 'stale' ? 'stale registration ignored' : 'registration applied');
  });
}

const registrationsCounter = (registry: Registry): Counter<'kind' | 'result'> =>
  new Counter({
    name: 'herald_registrations_total',
    help: 'Register and unregister events the registrar applied (result "applied") or ignored as stale (older than the device\'s last event, or an unregister naming a user the device no longer belongs to)',
    labelNames: ['kind', 'result'],
    registers: [registry],
  });

/**
 * A database that is down or restarting defers the message (it comes back in a second, spending no
 * attempt: an outage of any length parks nothing); any other database error is retried.
 */
function databaseFailure(err: unknown): Outcome {
  const reason = `database error: ${String(err)}`;
  return isDatabaseUnavailable(err) ? { kind: 'defer', code: 'database-unavailable', reason, delayMs: 1_000 } : { kind: 'retry', code: 'database', reason };
}

/**
 * Handles a batch of `push.registrations` messages: bad input and unusable apps are parked with a
 * readable reason; the rest are applied to devices (last event time wins) and acked. Database
 * failures defer or retry the affected messages (databaseFailure); bad input never throws.
 */
export function createRegistrarHandler(deps: RegistrarDeps): (messages: readonly InboundMessage[]) => Promise<Outcome[]> {
  const counted = deps.registry === undefined ? undefined : registrationsCounter(deps.registry);
  return async (messages) => {
    const outcomes: Outcome[] = messages.map(() => ACK);
    const decoded: Decoded[] = [];
    const memberships: { index: number; body: Buffer }[] = [];
    messages.forEach((message, index) => {
      if (isMembershipMessage(message.body)) {
        memberships.push({ index, body: message.body });
        return;
      }
      const result = decode(message);
      if (result.ok) {
        decoded.push({ index, reg: result.reg });
        if (result.dropped !== undefined) {
          deps.logger.warn({ app: result.reg.app, platform: result.reg.platform, token: result.reg.token, reason: result.dropped }, 'registration applied without a field it had wrong (timezone, locale, app version or last-seen time)');
        }
      } else {
        outcomes[index] = result.park;
        deps.logger.warn({ queue: message.queue, outcome: result.park }, 'registration parked');
      }
    });
    try {
      await apply(await checkApps(decoded, deps, outcomes), deps, outcomes, counted);
    } catch (err) {
      // A value PostgreSQL refuses (a token too long for its index, a year it has not) is one
      // message's: thrown, the consumer handles the batch again in halves until that message is
      // alone and parks it with the database's words, instead of retrying and parking them all.
      if (refusedValueReason(err) !== undefined) throw err;
      deps.logger.error({ err }, 'registrations could not be applied; retrying');
      for (const { index } of decoded) {
        if (outcomes[index]?.kind !== 'park') outcomes[index] = databaseFailure(err);
      }
    }
    try {
      if (memberships.length > 0) await applyMembershipEvents(memberships, deps, outcomes);
    } catch (err) {
      if (refusedValueReason(err) !== undefined) throw err;
      deps.logger.error({ err }, 'membership events could not be applied; retrying');
      for (const { index } of memberships) {
        if (outcomes[index]?.kind !== 'park') outcomes[index] = databaseFailure(err);
      }
    }
    return outcomes;
  };
}
