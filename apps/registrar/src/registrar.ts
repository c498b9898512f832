import { decodeWith, normalizeDeviceToken, Registration } from '@herald/contracts';
import { isDatabaseUnavailable, type AppRow, type DeviceRepository } from '@herald/db';
import type { Logger } from '@herald/logging';

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
  apps: { get(id: string): Promise<AppRow | undefined> };
  logger: Logger;
}

type Decoded = { index: number; reg: Registration };

const ACK: Outcome = { kind: 'ack' };

type Park = Extract<Outcome, { kind: 'park' }>;

function decode(message: InboundMessage): { ok: true; reg: Registration } | { ok: false; park: Park } {
  const parsed = decodeWith(Registration, message.body);
  // One spelling per token: APNs hex is stored in lower case.
  if (parsed.ok) return { ok: true, reg: { ...parsed.value, token: normalizeDeviceToken(parsed.value.platform, parsed.value.token) } };
  const code = parsed.reason.startsWith('malformed JSON') ? 'malformed-json' : 'schema';
  return { ok: false, park: { kind: 'park', code, reason: parsed.reason } };
}

/** Looks up each distinct app once; an app that cannot be used parks its messages. */
async function checkApps(regs: readonly Decoded[], deps: RegistrarDeps, outcomes: Outcome[]): Promise<Decoded[]> {
  const ids = [...new Set(regs.map((d) => d.reg.app))];
  const apps = new Map(await Promise.all(ids.map(async (id) => [id, await deps.apps.get(id)] as const)));
  return regs.filter(({ index, reg }) => {
    const app = apps.get(reg.app);
    if (app?.enabled === true) return true;
    outcomes[index] =
      app === undefined
        ? { kind: 'park', code: 'unknown-app', reason: `unknown app "${reg.app}"` }
        : { kind: 'park', code: 'app-disabled', reason: `app "${reg.app}" is disabled` };
    deps.logger.warn({ app: reg.app, outcome: outcomes[index] }, 'registration parked');
    return false;
  });
}

/** Applies the batch in one statement; stale events (older than the device's last) are acked. */
async function apply(valid: readonly Decoded[], deps: RegistrarDeps, outcomes: Outcome[]): Promise<void> {
  const results = await deps.devices.applyRegistrations(valid.map((d) => d.reg));
  valid.forEach(({ index, reg }, i) => {
    outcomes[index] = ACK;
    const log = { app: reg.app, platform: reg.platform, kind: reg.kind, eventAt: reg.eventAt, token: reg.token };
    if (results[i] === 'stale') deps.logger.debug(log, 'stale registration ignored');
    else deps.logger.debug(log, 'registration applied');
  });
}

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
  return async (messages) => {
    const outcomes: Outcome[] = messages.map(() => ACK);
    const decoded: Decoded[] = [];
    messages.forEach((message, index) => {
      const result = decode(message);
      if (result.ok) {
        decoded.push({ index, reg: result.reg });
      } else {
        outcomes[index] = result.park;
        deps.logger.warn({ queue: message.queue, outcome: result.park }, 'registration parked');
      }
    });
    try {
      await apply(await checkApps(decoded, deps, outcomes), deps, outcomes);
    } catch (err) {
      deps.logger.error({ err }, 'registrations could not be applied; retrying');
      for (const { index } of decoded) {
        if (outcomes[index]?.kind !== 'park') outcomes[index] = databaseFailure(err);
      }
    }
    return outcomes;
  };
}
