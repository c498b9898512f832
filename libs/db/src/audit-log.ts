import type { Kysely } from 'kysely';
import type { Logger } from '@herald/logging';
import type { AuditActorKind, AuditOutcome, HeraldTables } from './tables.ts';

/** Who acted: an operator key, the API's bootstrap admin key, or a person at the CLI. */
export interface AuditActor {
  kind: AuditActorKind;
  /** The operator key's id, "HERALD_ADMIN_KEY", or user@host for the CLI. */
  id: string;
  name: string;
}

/** What was asked: an action (`parked.replay`), its target (a queue, an app id) and the request (never a secret). */
export interface AuditRequest {
  action: string;
  target: string;
  request?: Record<string, unknown>;
}

export interface AuditEntry extends Required<AuditRequest> {
  id: string;
  at: Date;
  actor: AuditActor;
  outcome: AuditOutcome;
  result: unknown;
  finishedAt: Date | null;
}

export interface AuditLog {
  /** Record an action before it runs; the id is for `finish`. */
  start(actor: AuditActor, what: AuditRequest): Promise<string>;
  finish(id: string, outcome: Exclude<AuditOutcome, 'started'>, result: unknown): Promise<void>;
  /** Newest first. */
  list(filter?: { limit?: number; action?: string; actorId?: string }): Promise<AuditEntry[]>;
}

export function createAuditLog(db: Kysely<HeraldTables>): AuditLog {
  return {
    async start(actor, what) {
      const row = await db
        .insertInto('audit_log')
        .values({
          actor_kind: actor.kind,
          actor_id: actor.id,
          actor_name: actor.name,
          action: what.action,
          target: what.target,
          request: JSON.stringify(what.request ?? {}),
          result: null,
          finished_at: null,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      return String(row.id);
    },
    async finish(id, outcome, result) {
      await db
        .updateTable('audit_log')
        .set({ outcome, result: JSON.stringify(result ?? null), finished_at: new Date() })
        .where('id', '=', id)
        .execute();
    },
    async list(filter = {}) {
      let q = db
        .selectFrom('audit_log')
        .selectAll()
        .orderBy('id', 'desc')
        .limit(Math.min(Math.max(filter.limit ?? 50, 1), 10_000));
      if (filter.action !== undefined) q = q.where('action', '=', filter.action);
      if (filter.actorId !== undefined) q = q.where('actor_id', '=', filter.actorId);
      const rows = await q.execute();
      return rows.map((r) => ({
        id: String(r.id),
        at: r.at,
        actor: { kind: r.actor_kind, id: r.actor_id, name: r.actor_name },
        action: r.action,
        target: r.target,
        request: (r.request ?? {}) as Record<string, unknown>,
        outcome: r.outcome,
        result: r.result,
        finishedAt: r.finished_at,
      }));
    },
  };
}

/** Thrown by `audited` work to refuse an action with a reason; recorded as `refused`. */
export class ActionRefused extends Error {
  override readonly name = 'ActionRefused';
  constructor(
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/**
 * Thrown by `audited` work stopped on purpose part way (an operator's Ctrl-C): recorded as `failed`
 * with the reason (what it did before it stopped), and logged as a warning without a stack.
 */
export class ActionInterrupted extends Error {
  override readonly name: string = 'ActionInterrupted';
}

/**
 * Run a write action under the audit log: recorded before it runs (if that fails, it does not
 * run), finished with its result, refusal or error, and logged with the same fields, unless
 * `logOutcomes` is false (the CLI: it says the refusal or error to its person in words, and a JSON
 * line of it beside that was noise). An outcome that could not be recorded is logged always.
 */
export async function audited<T>(
  log: AuditLog,
  logger: Logger,
  actor: AuditActor,
  what: AuditRequest,
  work: () => Promise<T>,
  { logOutcomes = true }: { logOutcomes?: boolean } = {},
): Promise<T> {
  const id = await log.start(actor, what);
  const fields = { audit: id, actor, action: what.action, target: what.target, request: what.request ?? {} };
  const finish = async (outcome: Exclude<AuditOutcome, 'started'>, result: unknown): Promise<void> => {
    try {
      await log.finish(id, outcome, result);
    } catch (err) {
      logger.error({ err, ...fields, outcome, result }, 'audit: could not record the outcome (the action row stays "started")');
    }
  };
  let result: T;
  try {
    result = await work();
  } catch (err) {
    if (err instanceof ActionRefused) {
      await finish('refused', { reason: err.message, ...err.details });
      if (logOutcomes) logger.warn({ ...fields, outcome: 'refused', reason: err.message, ...err.details }, `audit: ${what.action} refused`);
    } else if (err instanceof ActionInterrupted) {
      await finish('failed', { error: err.message });
      if (logOutcomes) logger.warn({ ...fields, outcome: 'failed', reason: err.message }, `audit: ${what.action} interrupted`);
    } else {
      await finish('failed', { error: (err as Error).message });
      if (logOutcomes) logger.error({ ...fields, outcome: 'failed', err }, `audit: ${what.action} failed`);
    }
    throw err;
  }
  await finish('ok', result);
  if (logOutcomes) logger.info({ ...fields, outcome: 'ok', result }, `audit: ${what.action}`);
  return result;
}
