import { decodeWith, endpointHostProblem, normalizeDeviceToken, Registration } from '@herald/contracts';
import { deferWhileDatabaseUnavailable, isDatabaseUnavailable, refusedValueReason, type AppRow, type DeviceRepository } from '@herald/db';
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

/** `dropped`: why a field was left out (withoutBadFields). */
type Decoded = { index: number; reg: Registration; dropped?: string };

const ACK: Outcome = { kind: 'ack' };

type Park = Extract<Outcome, { kind: 'park' }>;

type Decode = { ok: true; reg: Registration; dropped?: string } | { ok: false; park: Park };

/**
 * Fields a registration can lose without losing the device: the token still gets its pushes, and
 * the device keeps the zone, language, app version and last-seen time it had (in UTC, default
 * language if none). An Android versionName such as "2.3.1 (45)" had parked every register of the
 * device, its token with it. A bad previousToken only costs the link to the token it replaces (the
 * old token is not invalidated, its pending pushes are not moved); parked, the new token was lost.
 */
const DROPPABLE = ['timezone', 'locale', 'appVersion', 'lastSeenAt', 'previousToken'] as const;

/**
 * A registration whose only problems are its timezone, locale, app version, last-seen time or previous token is applied without them (and the
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

/** The token, and a register's previousToken, as stored (normalizeDeviceToken). */
function normalized(reg: Registration): Registration {
  const token = normalizeDeviceToken(reg.platform, reg.token);
  if (reg.kind !== 'register' || reg.previousToken === undefined) return { ...reg, token };
  return { ...reg, token, previousToken: normalizeDeviceToken(reg.platform, reg.previousToken) };
}

function decode(message: InboundMessage): Decode {
  const parsed = decodeWith(Registration, message.body);
  const result: Decode | undefined = parsed.ok ? { ok: true, reg: parsed.value } : withoutBadFields(message.body, parsed.reason);
  // One spelling per token: APNs hex is stored in lower case.
  if (result?.ok === true) return { ...result, reg: normalized(result.reg) };
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
    if (refused === undefined) usable.push(d);
    else outcomes[d.index] = refused;
  }
  return usable;
}

type Applied = { reg: Registration; result: 'applied' | 'stale' };

/**
 * Applies the batch (one statement, one more a round of further events of a device); stale events (older than the device's last, or an unregister
 * naming a user the device no longer belongs to) are acked (and counted as such by tell).
 */
async function apply(valid: readonly Decoded[], deps: RegistrarDeps, outcomes: Outcome[]): Promise<Applied[]> {
  const results = await deps.devices.applyRegistrations(valid.map((d) => d.reg));
  return valid.map(({ index, reg }, i) => {
    outcomes[index] = ACK;
    return { reg, result: results[i] ?? 'stale' };
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
 * What the registrar's consumer does with what its handler throws (spread into ConsumeOptions): a
 * value PostgreSQL refuses is one message's, retried and parked alone with the database's words
 * (messageError); a database that is down or restarting defers the whole batch after the
 * consumer's back-off, 0.5 s doubling to 30 s while it stays away, spending no attempt, so an
 * outage of any length parks nothing (deferOn), with one log line a failed batch (the consumer's).
 */
export const registrarErrors = { messageError: refusedValueReason, deferOn: deferWhileDatabaseUnavailable } as const;

/**
 * A database error the handler leaves to its consumer (registrarErrors) is thrown; any other (a
 * statement the server rejects, a race) retries the messages it cost, with one log line.
 */
function onDatabaseError(err: unknown, what: string, indexes: readonly number[], deps: RegistrarDeps, outcomes: Outcome[]): void {
  if (refusedValueReason(err) !== undefined || isDatabaseUnavailable(err)) throw err;
  deps.logger.error({ err }, `${what} could not be applied; retrying`);
  const retry: Outcome = { kind: 'retry', code: 'database', reason: `database error: ${String(err)}` };
  for (const index of indexes) if (outcomes[index]?.kind !== 'park') outcomes[index] = retry;
}

/**
 * What a handled batch tells (its registrations parked, applied without a field, applied or
 * stale), once its outcomes are returned: a batch thrown to the consumer (deferred while the
 * database is away) comes again, and would tell it, and count it, again each time.
 */
function tell(batch: { messages: readonly InboundMessage[]; memberships: ReadonlySet<number>; decoded: readonly Decoded[]; applied: readonly Applied[] }, outcomes: readonly Outcome[], deps: RegistrarDeps, counted?: Counter<'kind' | 'result'>): void {
  const regs = new Map(batch.decoded.map((d) => [d.index, d]));
  batch.messages.forEach((message, index) => {
    const outcome = outcomes[index];
    const app = regs.get(index)?.reg.app;
    // Membership events tell their own (applyMembershipEvents).
    if (outcome?.kind === 'park' && !batch.memberships.has(index)) deps.logger.warn({ queue: message.queue, ...(app !== undefined && { app }), outcome }, 'registration parked');
  });
  for (const { index, reg, dropped } of batch.decoded) {
    if (dropped === undefined || outcomes[index]?.kind !== 'ack') continue;
    deps.logger.warn({ app: reg.app, platform: reg.platform, token: reg.token, reason: dropped }, 'registration applied without a field it had wrong (timezone, locale, app version, last-seen time or previous token)');
  }
  for (const { reg, result } of batch.applied) {
    counted?.inc({ kind: reg.kind, result });
    const log = { app: reg.app, platform: reg.platform, kind: reg.kind, eventAt: reg.eventAt, token: reg.token };
    deps.logger.debug(log, result === 'stale' ? 'stale registration ignored' : 'registration applied');
  }
}

/**
 * Handles a batch of `push.registrations` messages: bad input and unusable apps are parked with a
 * readable reason; the rest are applied to devices (last event time wins) and acked. A database
 * that is unavailable, or a value it refuses, is thrown for the consumer (registrarErrors); other
 * database errors retry the affected messages; bad input never throws.
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
      if (!result.ok) outcomes[index] = result.park;
      else decoded.push({ index, reg: result.reg, ...(result.dropped !== undefined && { dropped: result.dropped }) });
    });
    let applied: Applied[] = [];
    try {
      applied = await apply(await checkApps(decoded, deps, outcomes), deps, outcomes);
    } catch (err) {
      onDatabaseError(err, 'registrations', decoded.map((d) => d.index), deps, outcomes);
    }
    try {
      if (memberships.length > 0) await applyMembershipEvents(memberships, deps, outcomes);
    } catch (err) {
      onDatabaseError(err, 'membership events', memberships.map((m) => m.index), deps, outcomes);
    }
    tell({ messages, memberships: new Set(memberships.map((m) => m.index)), decoded, applied }, outcomes, deps, counted);
    return outcomes;
  };
}
