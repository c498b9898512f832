import { storableCopy } from '@herald/contracts';
import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type pg from 'pg';
import type { HeraldTables, JobsTable } from './tables.ts';
import { insertOutcomesStatement, listJobPushes, recordCancelledPushes, upsertOutcomes, type CancelledPush, type PushOutcomeEntry, type PushRecord } from './push-outcomes.ts';
import type { FanoutProgress } from './fanout-repository.ts';
import { queryPrepared } from './prepared.ts';
import { PARKED_PREFIX } from './job-status-view.ts';

/** What accepting a job id found: new, or already taken (by this app or another). */
/**
 * `sameContent`: whether the recorded job's content digest is the one given (undefined when either
 * is unknown, a job recorded before migration 0034 or parked as a body that is no job, or they are
 * of different versions: sameContentOf).
 */
/** `cancelled`: the job was cancelled (DELETE /v1/jobs/:id) after it was first accepted. */
/**
 * What recording a job id found. `published`: on its way; not for a job the demuxer parked (its
 * app disabled, its retries exhausted, the delivery limit): a repost of it is published again, and
 * its pushes are sent once whether it or a replay of the parked copy gets there first (the ledger).
 */
export type AcceptResult = { kind: 'new' } | { kind: 'existing'; app: string; published: boolean; cancelled: boolean; sameContent?: boolean };

/**
 * A job the demuxer parked for a cause a repost may have outlived (its app disabled, its retries
 * exhausted, its app unknown then): not on its way. Not one parked at the delivery limit: its
 * message kept killing the demuxers that took it, and a repost is its duplicate, not another round.
 */
const POISON_PARK = `${PARKED_PREFIX}delivery-limit`;
const parkedByDemuxer = (outcome: string | null | undefined): boolean => outcome?.startsWith(PARKED_PREFIX) === true && outcome !== POISON_PARK;

/**
 * AcceptResult's `sameContent` of a recorded digest and a given one, as a spread: nothing when
 * either is unknown, or they are of different versions (JOB_DIGEST_VERSION: 32 bytes for version 0,
 * else 33, the version first), so an upgrade that changes what the digest reads takes no job for another.
 */
export function sameContentOf(recorded: Buffer | null | undefined, given: Buffer | undefined): { sameContent?: boolean } {
  if (recorded == null || given === undefined || recorded.length !== given.length || (recorded.length > 32 && recorded[0] !== given[0])) return {};
  return { sameContent: recorded.equals(given) };
}

/** sameContentOf in SQL, for two bytea columns (as SQL text): true unless both are known, of one version, and differ. */
export const digestsMayMatch = (recorded: string, given: string): string =>
  `(${recorded} is null or ${given} is null or length(${recorded}) <> length(${given}) or (length(${recorded}) > 32 and get_byte(${recorded}, 0) <> get_byte(${given}, 0)) or ${recorded} = ${given})`;

/** An upsert's conflicting jobs row is the job `excluded` (its app, and a digest not told apart). */
const SAME_JOB = `jobs.app = excluded.app and ${digestsMayMatch('jobs.content_hash', 'excluded.content_hash')}`;
/**
 * A jobs row that records only the park of a job over AMQP naming an app Herald does not know (not
 * accepted by the API, not cancelled, no fan-out): nothing of it was sent, and no app holds it.
 */
const PARK_ONLY = `jobs.team is null and jobs.demux_outcome = 'parked: unknown-app' and jobs.cancelled_at is null and not exists (select 1 from fanouts f where f.job_id = jobs.id)`;
/**
 * The demuxer's upserts of a jobs row (recordDemux, recordJobParks, the fan-out start) write it only
 * when it is this job's, or records only the park of a job naming an unknown app, which the job
 * given its id takes over (the app's name misspelt, published again corrected): the where, and the
 * app and digest it then holds. Another job's row is left as it is (jobIdTaken says why). The API's
 * accept does not take such a row over: it answers 409 for it, as for any id another app holds.
 */
export const OWN_JOB_ROW = sql.raw(`((${SAME_JOB}) or (${PARK_ONLY}))`);
export const OWN_JOB_ROW_SET = sql.raw(
  `app = case when ${SAME_JOB} then jobs.app else excluded.app end, content_hash = case when ${SAME_JOB} then coalesce(jobs.content_hash, excluded.content_hash) else excluded.content_hash end`,
);

/**
 * derivePushId (@herald/contracts) in SQL, of two text expressions: the id of a job's push to a
 * device, so a statement can find the outcome of a push it knows only by its device (a fan-out
 * chunk's planned devices). One digest, in a scalar subquery.
 */
export const derivedPushId = (jobId: RawBuilder<unknown>, deviceId: RawBuilder<unknown>): RawBuilder<string> => sql<string>`
  (select encode(set_byte(set_byte(substring(x.d from 1 for 16), 6, (get_byte(x.d, 6) & 15) | 128), 8, (get_byte(x.d, 8) & 63) | 128), 'hex')::uuid
   from (select sha256(convert_to(${jobId}, 'UTF8') || decode('00', 'hex') || convert_to(${deviceId}, 'UTF8')) as d) x)`;

export interface JobRecord {
  id: string;
  app: string;
  acceptedAt: Date;
  publishedAt: Date | null;
  targeted: number | null;
  demuxOutcome: string | null;
  notices: string[];
  /** Target users the demuxer found no device for (each counts one in targeted). */
  noDevice: number | null;
  /** Why the demuxer parked the job itself (demuxOutcome `parked: <code>`). */
  demuxReason: string | null;
}

/**
 * A job's progress, read in one statement (one snapshot): the job row, its device pushes per
 * outcome, the parked ones per park code, and pushes still scheduled.
 */
export interface JobStatusRecord {
  job: JobRecord;
  outcomes: Record<string, number>;
  parkedBy: Record<string, number>;
  scheduled: number;
  /** When the job was cancelled (DELETE /v1/jobs/:id), or null. */
  cancelledAt?: Date | null;
  /** An audience job's fan-out progress (fanouts, fanout_chunks); null for a user job. */
  fanout?: FanoutProgress | null;
}

/** The demuxer's result for one job. */
export interface DemuxEntry {
  id: string;
  app: string;
  /** Every device push the job addressed (skipped ones included) plus one per user without a device. */
  targeted: number;
  outcome: string;
  notices?: readonly string[];
  noDevice?: number;
  /** Outcomes decided in the demuxer (opted-out, muted, expired), written with the job row. */
  pushes?: readonly PushOutcomeEntry[];
  /**
   * Pushes to devices dead since an earlier fan-out of the job counted them (a retry's), with the
   * job row: taken out of the store (the earlier pass may have stored them) and recorded where the
   * push has no outcome yet (one the earlier pass published may have its own); see recordDeadPushes.
   */
  dead?: readonly PushOutcomeEntry[];
  /** jobContentHash of the job as the demuxer read it: kept with the row, so another job given the same id is told apart. */
  contentHash?: Buffer;
  /** When the job was accepted (acceptedAtOf): a new row's accepted_at (ACCEPTED_AT); without it, now. */
  acceptedAt?: Date;
  /** Its devices were read as a retry's (findAudience's jobId), not as a first pass's. */
  again?: boolean;
  /** The snapshot of the read that found its devices (findAudience's readAs): kept with the job's first fan-out (migration 0047). */
  readAs?: string;
}

/**
 * A new jobs row's accepted_at, of the given one (`i.accepted_at`): when the job was accepted, as
 * acceptedAtOf (@herald/contracts) reads it, the client library's stamp for a job published over
 * AMQP, not when the demuxer got to it: one that waited two hours in push.jobs shows when it was
 * accepted, and its notices' times line up with it. Never later than now (PostgreSQL's clock, the
 * column's default: a producer's clock running ahead does not move it into the future); none given
 * (least() passes over a null), now. A row the API's accept wrote keeps its own. It may be far in
 * the past (a job parked a month ago, replayed): JOB_RETENTION_DAYS counts from the later of it and
 * demuxed_at, a new row's now (pruneJobs), so the row outlives its pushes' retries.
 */
const ACCEPTED_AT = sql.raw('least(i.accepted_at, now())');

/** Of an upsert on jobs: the row records no fan-out yet (the API's accept, or a park), so a fan-out's record of it is the first. */
const FIRST_FAN_OUT = sql.raw(`(jobs.demux_outcome is null or jobs.demux_outcome like 'parked: %')`);

/**
 * What recordDemux found: the jobs cancelled while they waited in push.jobs, the jobs whose id
 * another job holds (id → why: another app's, or other content), which it recorded nothing for,
 * and the jobs read as a first pass (an entry without `again`) that an earlier fan-out had
 * recorded: a copy published again over AMQP, whose message is no redelivery. Their row is
 * written as any copy's (the union: see recordDemux), none of their pushes' outcomes: the
 * demuxer reads their devices again as a retry's and records that.
 */
export interface DemuxRecorded {
  cancelled: ReadonlySet<string>;
  taken: ReadonlyMap<string, { code: JobIdTakenCode; reason: string }>;
  fannedOutBefore: ReadonlySet<string>;
}

/** Why a job's id is another job's: the codes the HTTP API answers 409 with (and the demuxer parks with). */
export type JobIdTakenCode = 'job-id-conflict' | 'job-id-reused';

/**
 * Why each of these jobs was not written by an upsert that left another job's row (OWN_JOB_ROW), read
 * in the same transaction. A row gone, or no longer telling the job apart, changed between the two
 * statements (pruned, forgotten, or written by another copy of the job): JobRowChangedError, and the
 * work is tried again rather than parked for good.
 */
export async function whyTaken(on: Kysely<HeraldTables>, jobs: ReadonlyArray<{ id: string; app: string; contentHash?: Buffer | undefined }>): Promise<Map<string, { code: JobIdTakenCode; reason: string }>> {
  const taken = new Map<string, { code: JobIdTakenCode; reason: string }>();
  if (jobs.length === 0) return taken;
  const holders = await on.selectFrom('jobs').select(['id', 'app', 'content_hash']).where('id', 'in', jobs.map((j) => j.id)).execute();
  const holderOf = new Map(holders.map((h) => [h.id, h]));
  for (const j of jobs) {
    const h = holderOf.get(j.id);
    const why = h === undefined ? undefined : jobIdTaken(j.id, j, { app: h.app, contentHash: h.content_hash });
    if (why === undefined) throw new JobRowChangedError(j.id);
    taken.set(j.id, why);
  }
  return taken;
}

/** A jobs row changed between an upsert that left it and the read of why: the work is tried again. */
export class JobRowChangedError extends Error {
  override readonly name = 'JobRowChangedError';
  constructor(id: string) {
    super(`the record of job "${id}" changed while it was written; trying again`);
  }
}

/** What each JobIdTakenCode says, at the API's door and in the demuxer's park reason. */
export const JOB_ID_TAKEN: Readonly<Record<JobIdTakenCode, (id: string) => string>> = {
  'job-id-conflict': (id) => `job id "${id}" is already used by another app`,
  'job-id-reused': (id) => `job id "${id}" was accepted before with other content: a retry must repeat the job as it was, a new job needs a new id`,
};

/**
 * Why a job with this id, app and content is not the job recorded under it (`recorded`), or
 * undefined when it is (a digest unknown on either side, as sameContentOf, does not tell them apart).
 */
export function jobIdTaken(
  id: string,
  given: { app: string; contentHash?: Buffer | undefined },
  recorded: { app: string; contentHash?: Buffer | null | undefined },
): { code: JobIdTakenCode; reason: string } | undefined {
  const code = recorded.app !== given.app ? 'job-id-conflict' : sameContentOf(recorded.contentHash, given.contentHash).sameContent === false ? 'job-id-reused' : undefined;
  return code === undefined ? undefined : { code, reason: JOB_ID_TAKEN[code](id) };
}

/** A job the demuxer parked (its own park, a retry that ran out, the delivery limit). */
export interface JobPark {
  id: string;
  app: string;
  code: string;
  reason: string;
  /** jobContentHash, when the parked body is a valid job: a park is not written onto another job's row. */
  contentHash?: Buffer;
  /** When the job was accepted (acceptedAtOf), when the parked body is a valid job: a new row's accepted_at (ACCEPTED_AT); without it, now. */
  acceptedAt?: Date;
}

/** A job id as the HTTP API records it: whose it is, and a digest of its content (jobContentHash). */
export interface JobIdRecord {
  id: string;
  app: string;
  team: string | null;
  contentHash?: Buffer;
}

export interface JobRepository {
  /** Record job ids once (one INSERT … ON CONFLICT DO NOTHING); the idempotency check of the HTTP API. */
  accept(jobs: readonly JobIdRecord[]): Promise<Map<string, AcceptResult>>;
  /**
   * RabbitMQ confirmed these jobs. A record another request forgot meanwhile (its own publish of
   * the same id failed) is written again: the job was published all the same.
   */
  markPublished(jobs: readonly JobIdRecord[]): Promise<void>;
  /** Nothing was published (a publish refused before it was sent, a conflict): forget the unpublished record so the caller may try again, unless it was cancelled meanwhile. */
  forget(ids: readonly string[]): Promise<void>;
  /**
   * The ids among these recorded as published for the same app with the same content (or a digest
   * not known: accepted before 0034): reposts of jobs accepted before, read without writing (a
   * cancelled one among them too: the caller tells it apart).
   */
  publishedBefore(jobs: readonly JobIdRecord[]): Promise<ReadonlySet<string>>;
  /**
   * The demuxer's result for each job: what it targeted, and the outcomes it decided itself, in one
   * transaction (idempotent upsert). Written before the job's pushes are published, so no outcome
   * is ever counted against a job whose targeted is not yet known. Returns the ids of the jobs
   * found cancelled (jobs.cancelled_at set: DELETE /v1/jobs/:id while the job waited in push.jobs),
   * read by the same statement, under the row lock its upsert takes, and of the jobs whose id is
   * another job's (jobIdTaken: another app's, or recorded with other content), for which nothing
   * is written: the row and outcomes stay the other job's.
   */
  recordDemux(entries: readonly DemuxEntry[]): Promise<DemuxRecorded>;
  /** Pushes of a cancelled job the demuxer neither published nor stored: `cancelled`, unless they have an outcome already. */
  recordCancelled(pushes: readonly CancelledPush[]): Promise<void>;
  /**
   * Jobs the demuxer parked: demuxOutcome `parked: <code>` with the reason (a job already fanned out
   * keeps its record, and a row another job holds, OWN_JOB_ROW, is left as it is).
   */
  recordJobParks(entries: readonly JobPark[]): Promise<void>;
  /** Final outcome per device push (see PushOutcomeKind); a later outcome replaces an earlier, except after delivered. */
  recordOutcomes(entries: readonly PushOutcomeEntry[]): Promise<void>;
  get(id: string): Promise<JobRecord | undefined>;
  status(id: string): Promise<JobStatusRecord | undefined>;
  /** A page of the job's device pushes, in push_id order after `after`. */
  pushes(id: string, page: { limit: number; after?: string }): Promise<PushRecord[]>;
}

/**
 * The HTTP API's idempotency check runs once per published job, on the answer's path, so it is a
 * named (prepared) statement sent through pg itself: PostgreSQL parses and plans it once per
 * connection, and no query is built per call. Measured on this machine, one job at a time
 * (4,000 sequential inserts, three rounds): a prepared VALUES insert took p50 0.16-0.19 ms and
 * 73-85 µs of PostgreSQL CPU, the Kysely-built unnest() insert 0.26-0.30 ms and 145-183 µs. In a
 * later comparison this prepared unnest() form was within about 10% of the prepared VALUES insert
 * (p50 0.22-0.24 against 0.21-0.23 ms, 103-125 against 90-100 µs), so one statement serves every
 * batch size. Rows are inserted in id order, like
 * every statement on `jobs` (no deadlocks).
 */
const ACCEPT = {
  name: 'herald_jobs_accept',
  text: `insert into jobs (id, app, team, content_hash)
    select * from unnest($1::text[], $2::text[], $3::text[], $4::bytea[]) as i(id, app, team, content_hash)
    order by id
    on conflict (id) do nothing
    returning id`,
};

/**
 * The records a mark did not find unpublished, put back as published if a failed publish of the
 * same id forgot them meanwhile; ids in order, as ACCEPT. Rare: the mark itself is an UPDATE.
 */
const RESTORE_PUBLISHED = {
  name: 'herald_jobs_restore_published',
  text: `insert into jobs (id, app, team, content_hash, published_at)
    select i.id, i.app, i.team, i.content_hash, now()
    from unnest($1::text[], $2::text[], $3::text[], $4::bytea[]) as i(id, app, team, content_hash)
    order by i.id
    on conflict (id) do update set published_at = now()
      where jobs.published_at is null and ${SAME_JOB}`,
};

const recordColumns = (jobs: readonly JobIdRecord[]): unknown[] => [
  jobs.map((j) => j.id),
  jobs.map((j) => j.app),
  jobs.map((j) => j.team),
  jobs.map((j) => j.contentHash ?? null),
];

/** `pool`: the pool under `db` (same connections and search_path), for the prepared statement. */
export function createJobRepository(db: Kysely<HeraldTables>, pool: pg.Pool): JobRepository {
  const get = async (id: string): Promise<JobRecord | undefined> => {
    const r = await db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
    return r === undefined ? undefined : toJobRecord(r);
  };
  return {
    get,
    async accept(jobs) {
      if (jobs.length === 0) return new Map();
      const { rows: inserted } = await pool.query<{ id: string }>({ ...ACCEPT, values: recordColumns(jobs) });
      const fresh = new Set(inserted.map((r) => r.id));
      const taken = jobs.filter((j) => !fresh.has(j.id)).map((j) => j.id);
      const existing =
        taken.length === 0 ? [] : await db.selectFrom('jobs').select(['id', 'app', 'published_at', 'content_hash', 'cancelled_at', 'demux_outcome']).where('id', 'in', taken).execute();
      const byId = new Map(existing.map((r) => [r.id, r]));
      return new Map(
        jobs.map((j): [string, AcceptResult] => {
          if (fresh.has(j.id)) return [j.id, { kind: 'new' }];
          // Gone again (a failed publish was forgotten meanwhile): taken by this app, not published.
          const r = byId.get(j.id);
          const published = r?.published_at != null && !parkedByDemuxer(r.demux_outcome);
          return [j.id, { kind: 'existing', app: r?.app ?? j.app, published, cancelled: r?.cancelled_at != null, ...sameContentOf(r?.content_hash, j.contentHash) }];
        }),
      );
    },
    async markPublished(jobs) {
      if (jobs.length === 0) return;
      // Only the record this job was accepted as (its app and digest; a digest unknown on either side,
      // as sameContentOf, does not tell them apart): one forgotten meanwhile and taken by another
      // request, for another app or content, is not that request's to be marked.
      const [ids, apps, , hashes] = recordColumns(jobs);
      const { rows: marked } = await sql<{ id: string }>`
        with i as (select * from unnest(${ids}::text[], ${apps}::text[], ${hashes}::bytea[]) as i(id, app, content_hash)),
        target as (
          select j.id from jobs j join i on i.id = j.id and i.app = j.app and ${sql.raw(digestsMayMatch('j.content_hash', 'i.content_hash'))}
          where j.published_at is null order by j.id for update of j)
        update jobs set published_at = now() from target where jobs.id = target.id
        returning jobs.id`.execute(db);
      // Not marked: published already (another request's mark), gone, or another's. One row per id:
      // ON CONFLICT DO UPDATE cannot touch a row twice in one statement.
      const done = new Set(marked.map((r) => r.id));
      const gone = [...new Map(jobs.filter((j) => !done.has(j.id)).map((j) => [j.id, j])).values()];
      if (gone.length > 0) await pool.query({ ...RESTORE_PUBLISHED, values: recordColumns(gone) });
    },
    async forget(ids) {
      if (ids.length === 0) return;
      await sql`
        with target as (select id from jobs where id = any(${[...ids]}::text[]) and published_at is null and cancelled_at is null order by id for update)
        delete from jobs using target where jobs.id = target.id`.execute(db);
    },
    async publishedBefore(jobs) {
      if (jobs.length === 0) return new Set();
      const given = new Map(jobs.map((j) => [j.id, j]));
      const rows = await db
        .selectFrom('jobs')
        .select(['id', 'app', 'content_hash'])
        .where('id', 'in', [...given.keys()])
        .where('published_at', 'is not', null)
        .where((eb) => eb.or([eb('demux_outcome', 'is', null), eb('demux_outcome', 'not like', `${PARKED_PREFIX}%`), eb('demux_outcome', '=', POISON_PARK)]))
        .execute();
      return new Set(
        rows.filter((r) => {
          const job = given.get(r.id);
          return job !== undefined && jobIdTaken(r.id, job, { app: r.app, contentHash: r.content_hash }) === undefined;
        }).map((r) => r.id),
      );
    },
    recordDemux: (entries) => recordDemux(db, pool, entries),
    recordCancelled: (pushes) => recordCancelledPushes(db, pushes),
    async recordJobParks(entries) {
      if (entries.length === 0) return;
      const rows = [...new Map(entries.map((e) => [e.id, e])).values()];
      // Not onto another job's row (another app's, or other content, given an id it holds).
      await sql`
        insert into jobs (id, app, published_at, targeted, demux_outcome, demux_reason, demuxed_at, content_hash, accepted_at)
        select i.id, i.app, now(), 0, 'parked: ' || i.code, i.reason, now(), i.content_hash, ${ACCEPTED_AT}
        from unnest(${rows.map((r) => r.id)}::text[], ${rows.map((r) => r.app)}::text[], ${rows.map((r) => r.code)}::text[], ${rows.map((r) => storableCopy(r.reason))}::text[],
          ${rows.map((r) => r.contentHash ?? null)}::bytea[], ${rows.map((r) => r.acceptedAt ?? null)}::timestamptz[])
          as i(id, app, code, reason, content_hash, accepted_at)
        order by i.id
        on conflict (id) do update set targeted = coalesce(jobs.targeted, 0), demux_outcome = excluded.demux_outcome, demux_reason = excluded.demux_reason,
          demuxed_at = now(), published_at = coalesce(jobs.published_at, now()), ${OWN_JOB_ROW_SET}
          where ${FIRST_FAN_OUT} and ${OWN_JOB_ROW}`.execute(db);
    },
    recordOutcomes: (entries) => upsertOutcomes(db, entries, pool),
    status: (id) => jobStatus(db, id),
    pushes: (id, page) => listJobPushes(db, id, page),
  };
}

type JobRow = Pick<
  Selectable<JobsTable>,
  'id' | 'app' | 'accepted_at' | 'published_at' | 'targeted' | 'demux_outcome' | 'notices' | 'no_device' | 'demux_reason'
>;

function toJobRecord(r: JobRow): JobRecord {
  return {
    id: r.id,
    app: r.app,
    acceptedAt: r.accepted_at,
    publishedAt: r.published_at,
    targeted: r.targeted,
    demuxOutcome: r.demux_outcome,
    notices: r.notices,
    noDevice: r.no_device,
    demuxReason: r.demux_reason,
  };
}

/**
 * The job row and its outcomes in one transaction, jobs first and in id order like every statement
 * on jobs. A job fanned out twice (redelivered, or published again over AMQP) is counted as the
 * union of both: targeted keeps the larger, no_device the smaller. Between the two a device may
 * have been invalidated (a retry of a pass that published nothing records its push invalid: see
 * findAudience's jobId, which reads from demuxed_at: the first fan-out's time, kept by later ones)
 * or registered (a user without one now has a push); either way the sum stays exact. Only two
 * such changes between the same two fan-outs could leave it off by one. demux_reason is cleared by
 * a fan-out (a parked job replayed after its cause was fixed). An entry read as a first pass whose
 * job another transaction's fan-out recorded (a copy published again over AMQP) is answered in
 * fannedOutBefore, its pushes' outcomes not written: the demuxer reads it again as a retry, so its
 * pushes are that fan-out's. The statement also returns the jobs found cancelled: the upsert updates the row's latest version (a cancel in progress is waited
 * for), so every cancel committed before it is seen; one committed after it is the cancel's and
 * the store's to handle (ScheduledPushRepository.schedule, cancelJob).
 */
async function recordDemux(db: Kysely<HeraldTables>, pool: pg.Pool, entries: readonly DemuxEntry[]): Promise<DemuxRecorded> {
  if (entries.length === 0) return { cancelled: new Set(), taken: new Map(), fannedOutBefore: new Set() };
  const rows = [...new Map(entries.map((e) => [e.id, e])).values()];
  // A row another job holds (another app's, or recorded with other content) is left as it is, and
  // not returned: the job given its id again is told so (recorded), nothing of it written.
  // `before`: another transaction's fan-out recorded the job (demuxed_at is kept; a first record
  // sets it to now(), this transaction's start). Not `<`: a copy recorded by another demuxer
  // whose transaction began after this one and committed while this one waited for a row lock has
  // the later time. The row is reached through its key (the upsert's conflict), whatever plan the
  // prepared statement keeps.
  const upsertJobs = sql<{ id: string; cancelled: boolean; before: boolean }>`
      with upserted as (
        insert into jobs (id, app, published_at, targeted, demux_outcome, demuxed_at, notices, no_device, content_hash, accepted_at, demux_snapshot)
        select i.id, i.app, now(), i.targeted, i.outcome, now(), coalesce(string_to_array(i.notices, E'\n'), '{}'), i.no_device, i.content_hash, ${ACCEPTED_AT}, i.read_as::pg_snapshot
        from unnest(${rows.map((r) => r.id)}::text[], ${rows.map((r) => r.app)}::text[], ${rows.map((r) => r.targeted)}::int[], ${rows.map((r) => r.outcome)}::text[],
          ${rows.map((r) => (r.notices !== undefined && r.notices.length > 0 ? r.notices.join('\n') : null))}::text[], ${rows.map((r) => r.noDevice ?? 0)}::int[],
          ${rows.map((r) => r.contentHash ?? null)}::bytea[], ${rows.map((r) => r.acceptedAt ?? null)}::timestamptz[], ${rows.map((r) => r.readAs ?? null)}::text[])
          as i(id, app, targeted, outcome, notices, no_device, content_hash, accepted_at, read_as)
        order by i.id
        on conflict (id) do update set targeted = greatest(jobs.targeted, excluded.targeted),
          no_device = least(jobs.no_device, excluded.no_device),
          demux_outcome = excluded.demux_outcome, demux_reason = null, notices = excluded.notices,
          demuxed_at = case when ${FIRST_FAN_OUT} then now() else jobs.demuxed_at end,
          demux_snapshot = case when ${FIRST_FAN_OUT} then excluded.demux_snapshot else jobs.demux_snapshot end,
          published_at = coalesce(jobs.published_at, now()), ${OWN_JOB_ROW_SET}
          where ${OWN_JOB_ROW}
        returning id, cancelled_at, demuxed_at)
      select id, cancelled_at is not null as cancelled, demuxed_at <> now() as before from upserted`;
  const firstReads = new Set(entries.filter((e) => e.again !== true).map((e) => e.id));
  const recorded = async (upserted: ReadonlyArray<{ id: string; cancelled: boolean; before: boolean }>, on: Kysely<HeraldTables>): Promise<DemuxRecorded> => {
    const written = new Set(upserted.map((r) => r.id));
    const taken = await whyTaken(on, rows.filter((r) => !written.has(r.id)));
    const fannedOutBefore = new Set(upserted.filter((r) => r.before && firstReads.has(r.id)).map((r) => r.id));
    return { cancelled: new Set(upserted.filter((r) => r.cancelled).map((r) => r.id)), taken, fannedOutBefore };
  };
  // From every entry: a retried copy of a job and a first delivery of it may share a part.
  const pushes = rows.flatMap((r) => r.pushes ?? []);
  const dead = entries.flatMap((e) => e.dead ?? []);
  // Alone (no outcome decided here, the usual case) it is a prepared statement (prepared.ts).
  if (pushes.length === 0 && dead.length === 0) return recorded(await queryPrepared(db, pool, upsertJobs), db);
  return db.transaction().execute(async (trx) => {
    const { rows: upserted } = await upsertJobs.execute(trx);
    const result = await recorded(upserted, trx);
    const own = (p: PushOutcomeEntry): boolean => !result.taken.has(p.jobId) && !result.fannedOutBefore.has(p.jobId);
    await upsertOutcomes(trx, pushes.filter(own));
    await recordDeadPushes(trx, dead.filter(own));
    return result;
  });
}

/**
 * DemuxEntry.dead, in one statement: taken out of the store and recorded where the push has no
 * outcome yet. A stored row a descheduler's release holds is left to it, not waited for (as
 * cancelJob does; a descheduler's nextDueAt read is waited out), and gets no outcome here: the
 * release writes outcomes of what it claims, so waiting on either, this transaction (holding its
 * part's jobs rows) and the release could each wait for the other. The released push reaches a
 * pusher, whose claim finds the device dead and records it invalid; a release that fails puts the
 * row back, still without an outcome.
 */
function recordDeadPushes(trx: Kysely<HeraldTables>, dead: readonly PushOutcomeEntry[]): Promise<unknown> {
  if (dead.length === 0) return Promise.resolve();
  return sql`
    with unstored as (
      delete from scheduled_pushes
      where push_id in (
        select s.push_id from scheduled_pushes s
        join unnest(${dead.map((d) => d.jobId)}::text[], ${dead.map((d) => d.pushId)}::uuid[]) as i(job_id, push_id) on s.job_id = i.job_id and s.push_id = i.push_id
        for no key update of s skip locked)
      returning push_id)
    ${insertOutcomesStatement(dead, sql<boolean>`(i.push_id in (select push_id from unstored) or not exists (select 1 from scheduled_pushes s where s.push_id = i.push_id))`)}`.execute(trx);
}

/**
 * FanoutProgress.parkedUnsent, for the fan-out `f`: the planned pushes of its parked chunks not done
 * that have no outcome and are not stored for later. Exact where a chunk recorded its planned
 * devices (migration 0027); one planned before then counts none (its pushes read in flight).
 */
const parkedUnsent = sql`(
  select count(*)::int from fanout_chunks p cross join lateral unnest(p.planned_devices) as d(id)
    cross join lateral (select ${derivedPushId(sql`p.job_id`, sql`d.id::text`)} as push_id) k
  where p.job_id = f.job_id and p.parked and p.state <> 'done'
    and not exists (select 1 from push_outcomes o where o.job_id = p.job_id and o.push_id = k.push_id)
    and not exists (select 1 from scheduled_pushes s where s.job_id = p.job_id and s.push_id = k.push_id))`;

/** One statement, so the counts are one snapshot: the sum of a job's outcomes never runs ahead of what was read as targeted. */
async function jobStatus(db: Kysely<HeraldTables>, id: string): Promise<JobStatusRecord | undefined> {
  const { rows } = await sql<
    JobRow & { scheduled: number; outcomes: Array<{ outcome: string; code: string | null; n: number }>; cancelled_at: Date | null; fanout: FanoutProgress | null }
  >`
    select j.id, j.app, j.accepted_at, j.published_at, j.targeted, j.demux_outcome, j.notices, j.no_device, j.demux_reason, j.cancelled_at,
      (select count(*) from scheduled_pushes s where s.job_id = j.id)::int as scheduled,
      (select json_build_object('state', f.state, 'audience', f.audience, 'size', f.audience_size, 'exact', f.size_exact,
          'expanded', coalesce(c.expanded, 0), 'chunks', coalesce(c.chunks, 0), 'chunksDone', coalesce(c.done, 0),
          'chunksOpen', coalesce(c.open, 0), 'parkedUnsent', ${parkedUnsent})
        from fanouts f left join lateral (
          select sum(devices) filter (where state <> 'pending') as expanded, count(*) as chunks, count(*) filter (where state = 'done') as done,
            count(*) filter (where state <> 'done' and not parked) as open
          from fanout_chunks where job_id = f.job_id) c on true
        where f.job_id = j.id) as fanout,
      coalesce((
        select json_agg(json_build_object('outcome', g.outcome, 'code', g.code, 'n', g.n))
        from (
          select outcome, case when outcome = 'parked' then coalesce(code, 'unknown') end as code, count(*)::int as n
          from push_outcomes where job_id = j.id group by 1, 2
        ) g), '[]'::json) as outcomes
    from jobs j where j.id = ${id}`.execute(db);
  const r = rows[0];
  if (r === undefined) return undefined;
  const outcomes: Record<string, number> = {};
  const parkedBy: Record<string, number> = {};
  for (const o of r.outcomes) {
    outcomes[o.outcome] = (outcomes[o.outcome] ?? 0) + o.n;
    if (o.code !== null) parkedBy[o.code] = (parkedBy[o.code] ?? 0) + o.n;
  }
  return { job: toJobRecord(r), outcomes, parkedBy, scheduled: r.scheduled, cancelledAt: r.cancelled_at, fanout: r.fanout };
}
