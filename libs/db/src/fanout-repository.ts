import { storableCopy } from '@herald/contracts';
import { sql, type Kysely } from 'kysely';
import type { HeraldTables } from './tables.ts';
import { CANCELLED_BEFORE_SENT, recordCancelledPushes, upsertOutcomes, type PushOutcomeEntry } from './push-outcomes.ts';
import { PARKED_PREFIX } from './job-status-view.ts';
import { OWN_JOB_ROW, OWN_JOB_ROW_SET, derivedPushId, whyTaken, type JobIdTakenCode } from './job-repository.ts';
import { MOST_REPLACEMENTS } from './device-replacement.ts';

export type FanoutState = 'expanding' | 'sending' | 'done' | 'cancelled';

export interface FanoutStart {
  jobId: string;
  app: string;
  /** The job's audience as given (shown in status and on the dashboard). */
  audience: object;
  /** The validated PushJob: chunk tasks read it from here. */
  job: object;
  /** When the job was accepted (acceptedAtOf): a new jobs row's accepted_at, never ahead of now, as recordDemux writes it. */
  acceptedAt: Date;
  size: number;
  exact: boolean;
  /** What Herald adapted or warns of (jobNotices): the job's status shows them, as a user job's. */
  notices?: readonly string[];
  /** jobContentHash of the job: kept with its jobs row, so another job given the same id is told apart (jobIdTaken). */
  contentHash?: Buffer;
}

/** What start found: the fan-out (made now, or by an earlier copy of the job), or that the job's id is another job's. */
export type FanoutStarted = { created: boolean; state: FanoutState; open: number[] } | { taken: { code: JobIdTakenCode; reason: string } };

export interface Fanout {
  jobId: string;
  app: string;
  job: unknown;
  acceptedAt: Date;
  /** When the fan-out was recorded (the recently-active follower walk reads activity as of then). */
  startedAt: Date;
  /** The snapshot the fan-out started with (pg_snapshot as text): a topic is read as its members were then; null before migration 0026. */
  startSnapshot: string | null;
  state: FanoutState;
}

export interface FanoutChunk {
  chunkNo: number;
  afterCursor: string | null;
  /** Where the chunk ended when it was first read (chunk k+1 starts there), or null if not linked or the last. */
  nextCursor: string | null;
  /** Whether its end is recorded: `nextCursor`, or the audience ended with it. */
  linked: boolean;
  state: 'pending' | 'planned' | 'done';
  /** The devices it planned pushes for, when planned (null before migration 0027). */
  planned: PlannedDevices | null;
}

/** The devices a chunk planned pushes for, in order: each device id with the user the push addresses and whether it goes to the device itself. */
export interface PlannedDevices {
  deviceIds: string[];
  userIds: string[];
  toDevice: boolean[];
}

/** What a chunk found and decided, written with its skip outcomes before its pushes are published. */
export interface ChunkCounts {
  /** Devices read (skipped ones included). */
  devices: number;
  /** Device pushes addressed plus one per member without a device. */
  targeted: number;
  noDevice: number;
  /** Pushes published now or stored for later. */
  emitted: number;
  outcomes: readonly PushOutcomeEntry[];
  /** The devices pushes were planned for (the chunk's reachable devices), redone exactly after a redelivery. */
  planned: PlannedDevices;
  /**
   * The devices the chunk read, and a time before the fan-out started: those that changed hands
   * since then (devices.user_changed_at) and that another chunk planned are that chunk's, and the
   * chunk is not recorded with them (recordChunk answers `elsewhere`).
   */
  moved?: { deviceIds: readonly string[]; since: Date };
}

/**
 * What recordChunk did. `elsewhere` (nothing written): devices of ChunkCounts.moved another chunk
 * planned first; plan the chunk again without them and record that.
 */
export type ChunkRecorded = 'recorded' | 'cancelled' | 'planned-before' | { elsewhere: ReadonlySet<string> };

export interface FanoutProgress {
  state: FanoutState;
  audience: unknown;
  size: number | null;
  exact: boolean;
  /** Devices read so far (chunks planned or done). */
  expanded: number;
  chunks: number;
  chunksDone: number;
  /** Chunks neither done nor parked (job status only): still to be read, or their pushes to be sent. */
  chunksOpen?: number;
  /**
   * Pushes of chunks whose task is parked and which are not done (job status only) that have no
   * outcome and are not stored for later: planned, maybe never published, so with no outcome coming
   * until the task is replayed.
   */
  parkedUnsent?: number;
}

export interface RunningFanout extends FanoutProgress {
  jobId: string;
  app: string;
  createdAt: Date;
  targeted: number;
  delivered: number;
  /** Device pushes with any final outcome (delivered, skipped, failed, ...). */
  settled: number;
}

export interface FanoutRepository {
  /**
   * Record a new fan-out with its first chunk, and the job row (demux outcome fanned-out). Idempotent:
   * for a fan-out already recorded, `created` is false and `open` lists its chunks not yet done (a
   * redelivered job re-publishes their tasks, in case the first delivery died before publishing).
   * A job whose id another job holds (OWN_JOB_ROW) gets `taken` instead, nothing recorded.
   */
  start(f: FanoutStart): Promise<FanoutStarted>;
  get(jobId: string): Promise<Fanout | undefined>;
  chunk(jobId: string, chunkNo: number): Promise<FanoutChunk | undefined>;
  /** The fan-out's state (the chunk handler checks it before reading and before publishing). */
  state(jobId: string): Promise<FanoutState | undefined>;
  /**
   * Chunk k was read: remember where it ended and create chunk k+1 starting there (unless it was the
   * last). The first to link wins: `next` is the end recorded (another copy's, if it linked first),
   * `created` true only for the caller that created k+1 (INSERT … ON CONFLICT DO NOTHING).
   */
  linkNext(jobId: string, chunkNo: number, next: string | null): Promise<{ created: boolean; next: string | null }>;
  /**
   * In one transaction: the chunk's counts, planned devices and skip outcomes, and the job's
   * targeted / no_device as the sum over its chunks (so the job's status adds up at every moment).
   * 'cancelled' (nothing written) when the job was cancelled meanwhile; 'planned-before' (nothing
   * written) when another copy planned the chunk first; `elsewhere` (nothing written) when a device
   * of `counts.moved` that changed hands is another chunk's: a device whose registration moved it
   * from one member to a member later in the walk while the fan-out ran is read twice. Looked for
   * under the job row's lock, which every chunk's record takes first, so of two chunks that read
   * such a device side by side, the one recording second finds the first's.
   */
  recordChunk(jobId: string, chunkNo: number, counts: ChunkCounts): Promise<ChunkRecorded>;
  /** A chunk redone from its planned devices: the outcomes it decided now (skips, expiry), unless the job was cancelled meanwhile. */
  recordOutcomes(jobId: string, outcomes: readonly PushOutcomeEntry[]): Promise<'recorded' | 'cancelled'>;
  /** A planned chunk of a cancelled job: its pushes without an outcome yet are recorded cancelled (they may never have been published). */
  cancelPlanned(jobId: string, pushes: ReadonlyArray<{ pushId: string; deviceId: string }>): Promise<void>;
  /**
   * The chunk's pushes are confirmed or stored; the fan-out moves to `sending` once its last chunk
   * is done. Once no chunk of the job is parked (recordPark) any more, the job's park is lifted.
   */
  finishChunk(jobId: string, chunkNo: number): Promise<void>;
  /**
   * A chunk task of a fan-out still expanding was parked (the delivery limit, retries run out) before
   * the chunk was done: the fan-out cannot finish until an operator replays it, so the job shows
   * `parked: <code>` with the reason instead of expanding forever, until that chunk is done.
   */
  recordPark(jobId: string, chunkNo: number, code: string, reason: string): Promise<void>;
  /**
   * Mark the job cancelled and stop its fan-out if one is still expanding or sending (`fanout`);
   * the pushes of its chunks planned and not done get outcome `cancelled` where they have none.
   * `known`: Herald has the job (accepted by the HTTP API, demuxed, or an audience job started);
   * a job still queued for the demuxer after a direct publish is not, and nothing is marked.
   */
  cancel(jobId: string): Promise<{ known: boolean; fanout: boolean }>;
  progress(jobId: string): Promise<FanoutProgress | undefined>;
  /** Fan-outs expanding or sending (newest first), with their delivery counts (the dashboard). */
  running(limit: number): Promise<RunningFanout[]>;
  /** Sending fan-outs whose every push has an outcome become done. */
  markSettled(jobIds: readonly string[]): Promise<void>;
}

export function createFanoutRepository(db: Kysely<HeraldTables>): FanoutRepository {
  return {
    start: (f) => start(db, f),
    async get(jobId) {
      const { rows } = await sql<{ job_id: string; app: string; job: unknown; accepted_at: Date; created_at: Date; start_snapshot: string | null; state: FanoutState }>`
        select job_id, app, job, accepted_at, created_at, start_snapshot::text, state from fanouts where job_id = ${jobId}`.execute(db);
      const r = rows[0];
      return r === undefined
        ? undefined
        : { jobId: r.job_id, app: r.app, job: r.job, acceptedAt: r.accepted_at, startedAt: r.created_at, startSnapshot: r.start_snapshot, state: r.state };
    },
    async chunk(jobId, chunkNo) {
      const { rows } = await sql<ChunkRow>`
        select after_cursor, next_cursor, last_chunk, state, planned_devices::text[] as planned_devices, planned_users, planned_to_device
        from fanout_chunks where job_id = ${jobId} and chunk_no = ${chunkNo}`.execute(db);
      const r = rows[0];
      return r === undefined ? undefined : toChunk(chunkNo, r);
    },
    async state(jobId) {
      const { rows } = await sql<{ state: FanoutState }>`select state from fanouts where job_id = ${jobId}`.execute(db);
      return rows[0]?.state;
    },
    linkNext: (jobId, chunkNo, next) =>
      db.transaction().execute(async (trx) => {
        // The chunk's row lock orders racing copies: the second sees the first's end and keeps it.
        const { rows: linked } = await sql<{ next_cursor: string | null }>`
          update fanout_chunks set next_cursor = case when next_cursor is null and not last_chunk then ${next}::text else next_cursor end,
            last_chunk = last_chunk or (next_cursor is null and ${next}::text is null), updated_at = now()
          where job_id = ${jobId} and chunk_no = ${chunkNo} returning next_cursor`.execute(trx);
        const recorded = linked[0] === undefined ? next : linked[0].next_cursor;
        if (recorded === null) return { created: false, next: null };
        const { rows } = await sql`insert into fanout_chunks (job_id, chunk_no, after_cursor) values (${jobId}, ${chunkNo + 1}, ${recorded})
          on conflict (job_id, chunk_no) do nothing returning chunk_no`.execute(trx);
        return { created: rows.length > 0, next: recorded };
      }),
    recordChunk: (jobId, chunkNo, counts) => recordChunk(db, jobId, chunkNo, counts),
    recordOutcomes: (jobId, outcomes) =>
      db.transaction().execute(async (trx) => {
        if (await cancelledForUpdate(trx, jobId)) return 'cancelled' as const;
        await upsertOutcomes(trx, outcomes);
        return 'recorded' as const;
      }),
    cancelPlanned: (jobId, pushes) => recordCancelledPushes(db, pushes.map((p) => ({ ...p, jobId }))),
    async finishChunk(jobId, chunkNo) {
      await sql`update fanout_chunks set state = 'done', parked = false, updated_at = now() where job_id = ${jobId} and chunk_no = ${chunkNo}`.execute(db);
      await sql`
        update fanouts set state = 'sending', updated_at = now()
        where job_id = ${jobId} and state = 'expanding'
          and exists (select 1 from fanout_chunks c where c.job_id = ${jobId} and c.last_chunk and c.state = 'done')
          and not exists (select 1 from fanout_chunks c where c.job_id = ${jobId} and c.state <> 'done')`.execute(db);
      await sql`
        update jobs set demux_outcome = 'fanned-out', demux_reason = null
        where id = ${jobId} and demux_outcome like ${`${PARKED_PREFIX}%`}
          and not exists (select 1 from fanout_chunks c where c.job_id = ${jobId} and c.parked)`.execute(db);
    },
    recordPark: (jobId, chunkNo, code, reason) =>
      // The job's row first, like every statement on jobs (recordChunk holds it while it writes the chunk).
      // The chunk is marked only while not done (a copy finishing it meanwhile is waited for and
      // re-read), and the job only if the chunk was: a done chunk left marked kept the park for good.
      db.transaction().execute(async (trx) => {
        await sql`select id from jobs where id = ${jobId} for update`.execute(trx);
        const { rows } = await sql`
          update fanout_chunks set parked = true
          where job_id = ${jobId} and chunk_no = ${chunkNo} and state <> 'done'
            and exists (select 1 from fanouts f where f.job_id = ${jobId} and f.state = 'expanding')
          returning chunk_no`.execute(trx);
        if (rows.length === 0) return;
        await sql`
          update jobs set demux_outcome = ${PARKED_PREFIX + code}, demux_reason = ${storableCopy(reason)}
          where id = ${jobId} and (demux_outcome = 'fanned-out' or demux_outcome like ${`${PARKED_PREFIX}%`})`.execute(trx);
      }),
    cancel: (jobId) =>
      db.transaction().execute(async (trx) => {
        // jobs first, like every statement on jobs: recordChunk holds this row's lock while it writes.
        // Stamped once the row's lock is had: the pushers read cancellations a few seconds back from
        // the latest they saw (cancelled-jobs.ts), so a cancel that waited longer for the lock and
        // carried an earlier time (its transaction's start, or an update's value computed before
        // its wait) than cancels committed meanwhile would never be read.
        await sql`
          insert into jobs (id, app, published_at)
          select job_id, app, now() from fanouts where job_id = ${jobId}
          on conflict (id) do nothing`.execute(trx);
        await sql`select 1 from jobs where id = ${jobId} for update`.execute(trx);
        const marked = await sql`update jobs set cancelled_at = coalesce(cancelled_at, clock_timestamp()) where id = ${jobId} returning id`.execute(trx);
        const { rows } = await sql`
          update fanouts set state = 'cancelled', cancelled_at = now(), updated_at = now()
          where job_id = ${jobId} and state in ('expanding', 'sending') returning job_id`.execute(trx);
        await cancelPlannedChunks(trx, jobId);
        return { known: marked.rows.length > 0, fanout: rows.length > 0 };
      }),
    async progress(jobId) {
      const { rows } = await sql<ProgressRow>`${progressSelect} where f.job_id = ${jobId}`.execute(db);
      const r = rows[0];
      return r === undefined ? undefined : toProgress(r);
    },
    async running(limit) {
      const { rows } = await sql<ProgressRow & { job_id: string; app: string; created_at: Date; targeted: number | null; delivered: number; settled: number }>`
        select p.*, j.targeted,
          (select count(*) from push_outcomes o where o.job_id = p.job_id and o.outcome = 'delivered')::int as delivered,
          (select count(*) from push_outcomes o where o.job_id = p.job_id and o.outcome <> 'replayed')::int as settled
        from (${progressSelect} where f.state in ('expanding', 'sending') order by f.created_at desc limit ${limit}) p
        left join jobs j on j.id = p.job_id
        order by p.created_at desc`.execute(db);
      return rows.map((r) => ({
        ...toProgress(r),
        jobId: r.job_id,
        app: r.app,
        createdAt: r.created_at,
        targeted: r.targeted ?? 0,
        delivered: r.delivered,
        settled: r.settled + r.no_device,
      }));
    },
    async markSettled(jobIds) {
      if (jobIds.length === 0) return;
      await sql`update fanouts set state = 'done', updated_at = now() where job_id = any(${[...jobIds]}::text[]) and state = 'sending'`.execute(db);
    },
  };
}

async function start(db: Kysely<HeraldTables>, f: FanoutStart): Promise<FanoutStarted> {
  return db.transaction().execute(async (trx) => {
    // The upsert holds the job's row until this commits, so a cancel either came before (and is
    // read here) or waits and then cancels the fan-out made here. A row another job holds (another
    // app's, or recorded with other content) is left as it is: this job is told so, nothing made.
    const { rows: job } = await sql<{ cancelled: boolean }>`
      insert into jobs (id, app, published_at, targeted, demux_outcome, demuxed_at, no_device, notices, content_hash, accepted_at)
      values (${f.jobId}, ${f.app}, now(), 0, 'fanned-out', now(), 0, ${[...(f.notices ?? [])]}::text[], ${f.contentHash ?? null},
        least(${f.acceptedAt.toISOString()}::timestamptz, now()))
      on conflict (id) do update set targeted = coalesce(jobs.targeted, 0), no_device = coalesce(jobs.no_device, 0),
        demux_outcome = 'fanned-out', demux_reason = null, demuxed_at = now(), published_at = coalesce(jobs.published_at, now()),
        notices = excluded.notices, ${OWN_JOB_ROW_SET}
        where ${OWN_JOB_ROW}
      returning cancelled_at is not null as cancelled`.execute(trx);
    // Another job's row: why (whyTaken answers for each job it is given, or throws JobRowChangedError).
    if (job.length === 0) return { taken: (await whyTaken(trx, [{ id: f.jobId, app: f.app, contentHash: f.contentHash }])).get(f.jobId) as { code: JobIdTakenCode; reason: string } };
    // A job cancelled while it waited for the demuxer (DELETE /v1/jobs/:id finds its jobs row)
    // gets a fan-out that is cancelled from the start: no chunk, nothing read, nothing sent.
    const cancelled = job[0]?.cancelled === true;
    const { rows: created } = await sql`
      insert into fanouts (job_id, app, audience, job, accepted_at, audience_size, size_exact, state, cancelled_at, start_snapshot)
      values (${f.jobId}, ${f.app}, ${JSON.stringify(f.audience)}::jsonb, ${JSON.stringify(f.job)}::jsonb, ${f.acceptedAt.toISOString()}::timestamptz, ${f.size}, ${f.exact},
        ${cancelled ? 'cancelled' : 'expanding'}, ${cancelled ? sql`now()` : null}, pg_current_snapshot())
      on conflict (job_id) do nothing returning job_id`.execute(trx);
    if (created.length > 0 && cancelled) return { created: true, state: 'cancelled' as const, open: [] };
    if (created.length > 0) {
      await sql`insert into fanout_chunks (job_id, chunk_no, after_cursor) values (${f.jobId}, 0, null)`.execute(trx);
      return { created: true, state: 'expanding' as const, open: [0] };
    }
    const { rows } = await sql<{ state: FanoutState; open: number[] | null }>`
      select f.state, (select array_agg(c.chunk_no order by c.chunk_no) from fanout_chunks c where c.job_id = f.job_id and c.state <> 'done') as open
      from fanouts f where f.job_id = ${f.jobId}`.execute(trx);
    const r = rows[0];
    return { created: false, state: r?.state ?? 'expanding', open: r?.open ?? [] };
  });
}

/**
 * The pushes of a cancelled job's chunks planned and not done, counted in targeted and maybe never
 * published (the chunk's task may be parked, or its demuxer gone): recorded cancelled where they
 * have no outcome (a delivery stays delivered), or the job read cancelling for good. A stored one is
 * left to the cancel's removal of the job's stored pushes (or a descheduler's claim). Under the job
 * row's lock, so a chunk planned after it is refused (recordChunk), and one planned before is seen;
 * a push of a chunk still sending is then dropped by its pusher, or delivered first (it overwrites).
 */
async function cancelPlannedChunks(trx: Kysely<HeraldTables>, jobId: string): Promise<void> {
  await sql`
    insert into push_outcomes (push_id, job_id, outcome, code, reason, device_id)
    select k.push_id, c.job_id, 'cancelled', 'cancelled', ${CANCELLED_BEFORE_SENT}, d.id::text
    from fanout_chunks c cross join lateral unnest(c.planned_devices) as d(id)
      cross join lateral (select ${derivedPushId(sql`c.job_id`, sql`d.id::text`)} as push_id) k
    where c.job_id = ${jobId} and c.state = 'planned'
      and not exists (select 1 from scheduled_pushes s where s.job_id = c.job_id and s.push_id = k.push_id)
    order by k.push_id
    on conflict (job_id, push_id) do nothing`.execute(trx);
}

/**
 * Of these devices, those another chunk of the job planned already, or whose token's replacement
 * (migration 0045) it planned. Only devices that changed hands since `since` (user_changed_at) can
 * be planned twice, so only they are looked for. A token replaced while the fan-out ran (a
 * register naming it as previousToken) is one device read as two rows: the old by a chunk before
 * the rotation, the new by one after it (a broadcast reads by id, and the new row's comes later).
 * The push planned for the old one is sent to the new one (the pusher's claim), so the chunk that
 * records second leaves out its row, whichever of the two it holds: a device whose chain of
 * replacements, back or forward, reaches a device another chunk planned.
 */
async function plannedElsewhere(trx: Kysely<HeraldTables>, jobId: string, chunkNo: number, deviceIds: readonly string[], since: Date): Promise<Set<string>> {
  if (deviceIds.length === 0) return new Set();
  const ids = sql`${[...deviceIds]}::bigint[]`;
  const hops = sql.lit(MOST_REPLACEMENTS);
  // Each device of the chunk that may be planned elsewhere, with a device (`planned_as`: itself, or
  // one of its chain) to look for; `holder`, for a replacement (`back`), its user now.
  const { rows: candidates } = await sql<{ id: string; planned_as: string; holder: string | null; back: boolean }>`
    with recursive back (planned_as, id, hops) as (
      select o.id, o.replaced_by, 1 from devices o where o.replaced_by = any(${ids})
      union all
      select o.id, b.id, b.hops + 1 from back b join devices o on o.replaced_by = b.planned_as where b.hops < ${hops}
    ), forth (planned_as, id, hops) as (
      select d.replaced_by, d.id, 1 from devices d where d.id = any(${ids}) and d.replaced_by is not null
      union all
      select n.replaced_by, f.id, f.hops + 1 from forth f join devices n on n.id = f.planned_as where n.replaced_by is not null and f.hops < ${hops}
    )
    select id::text as id, id::text as planned_as, null::text as holder, false as back from devices where id = any(${ids}) and user_changed_at > ${since.toISOString()}::timestamptz
    union all select b.id::text, b.planned_as::text, d.user_id, true from back b join devices d on d.id = b.id
    union all select id::text, planned_as::text, null, false from forth`.execute(trx);
  if (candidates.length === 0) return new Set();
  const lookFor = [...new Set(candidates.map((c) => c.planned_as))];
  const { rows } = await sql<{ id: string; user_id: string; to_device: boolean }>`
    select distinct x.id::text, x.user_id, x.to_device
    from fanout_chunks f cross join lateral unnest(f.planned_devices, f.planned_users, f.planned_to_device) as x(id, user_id, to_device)
    where f.job_id = ${jobId} and f.chunk_no <> ${chunkNo} and f.planned_devices && ${lookFor}::bigint[] and x.id = any(${lookFor}::bigint[])`.execute(trx);
  const planned = new Map<string, Array<{ user_id: string; to_device: boolean }>>();
  for (const r of rows) {
    const plans = planned.get(r.id);
    if (plans === undefined) planned.set(r.id, [r]);
    else plans.push(r);
  }
  // A replacement is another chunk's only if that chunk's push for the old token moves to it: one
  // addressed to the device, or to its user now. Planned for a user who no longer holds it (the
  // phone changed hands before its new token), that push is dropped as reassigned, and this chunk's
  // push is the only one its user gets.
  const moves = (c: (typeof candidates)[number]) => !c.back || (planned.get(c.planned_as) ?? []).some((p) => p.to_device || p.user_id === c.holder);
  return new Set(candidates.filter((c) => planned.has(c.planned_as) && moves(c)).map((c) => c.id));
}

/** Lock the job's row (every writer of its counts and outcomes takes it first) and tell whether it was cancelled. */
async function cancelledForUpdate(trx: Kysely<HeraldTables>, jobId: string): Promise<boolean> {
  const { rows } = await sql<{ cancelled: boolean }>`
    select j.cancelled_at is not null or coalesce(f.state = 'cancelled', false) as cancelled
    from jobs j left join fanouts f on f.job_id = j.id where j.id = ${jobId} for update of j`.execute(trx);
  return rows[0]?.cancelled !== false;
}

interface ChunkRow {
  after_cursor: string | null;
  next_cursor: string | null;
  last_chunk: boolean;
  state: FanoutChunk['state'];
  planned_devices: string[] | null;
  planned_users: string[] | null;
  planned_to_device: boolean[] | null;
}

function toChunk(chunkNo: number, r: ChunkRow): FanoutChunk {
  const planned =
    r.planned_devices === null || r.planned_users === null || r.planned_to_device === null
      ? null
      : { deviceIds: r.planned_devices, userIds: r.planned_users, toDevice: r.planned_to_device };
  return { chunkNo, afterCursor: r.after_cursor, nextCursor: r.next_cursor, linked: r.next_cursor !== null || r.last_chunk, state: r.state, planned };
}

async function recordChunk(db: Kysely<HeraldTables>, jobId: string, chunkNo: number, c: ChunkCounts): Promise<ChunkRecorded> {
  return db.transaction().execute(async (trx): Promise<ChunkRecorded> => {
    // Its own statement, so the sums below are read after every other chunk's transaction that held
    // this lock has committed (a subquery in the same statement would read the snapshot before the wait).
    if (await cancelledForUpdate(trx, jobId)) return 'cancelled';
    // After the lock, for the same reason: another chunk's planned devices are read once it committed.
    if (c.moved !== undefined) {
      const elsewhere = await plannedElsewhere(trx, jobId, chunkNo, c.moved.deviceIds, c.moved.since);
      if (elsewhere.size > 0) return { elsewhere };
    }
    // Only a pending chunk is planned here (a chunk planned before migration 0027, without its
    // devices, is planned again as before: the most any read counted, the fewest without a device).
    const { rows: planned } = await sql`
      update fanout_chunks set state = 'planned',
        devices = greatest(devices, ${c.devices}), targeted = greatest(targeted, ${c.targeted}),
        no_device = least(case when state = 'pending' then ${c.noDevice} else no_device end, ${c.noDevice}),
        emitted = greatest(emitted, ${c.emitted}), updated_at = now(),
        planned_devices = ${c.planned.deviceIds}::bigint[], planned_users = ${c.planned.userIds}::text[], planned_to_device = ${c.planned.toDevice}::boolean[]
      where job_id = ${jobId} and chunk_no = ${chunkNo} and (state = 'pending' or (state = 'planned' and planned_devices is null))
      returning chunk_no`.execute(trx);
    if (planned.length === 0) return 'planned-before';
    await upsertOutcomes(trx, c.outcomes);
    await sql`
      update jobs set (targeted, no_device) = (
        select coalesce(sum(targeted), 0)::int, coalesce(sum(no_device), 0)::int from fanout_chunks where job_id = ${jobId})
      where id = ${jobId}`.execute(trx);
    return 'recorded';
  });
}

interface ProgressRow {
  job_id: string;
  app: string;
  created_at: Date;
  state: FanoutState;
  audience: unknown;
  audience_size: string | null;
  size_exact: boolean;
  expanded: number;
  chunks: number;
  chunks_done: number;
  no_device: number;
}

const progressSelect = sql`
  select f.job_id, f.app, f.created_at, f.state, f.audience, f.audience_size, f.size_exact,
    coalesce(c.expanded, 0)::int as expanded, coalesce(c.chunks, 0)::int as chunks, coalesce(c.chunks_done, 0)::int as chunks_done,
    coalesce(c.no_device, 0)::int as no_device
  from fanouts f
  left join lateral (
    select sum(devices) filter (where state <> 'pending') as expanded, count(*) as chunks,
      count(*) filter (where state = 'done') as chunks_done, sum(no_device) as no_device
    from fanout_chunks where job_id = f.job_id
  ) c on true`;

function toProgress(r: ProgressRow): FanoutProgress {
  return {
    state: r.state,
    audience: r.audience,
    size: r.audience_size === null ? null : Number(r.audience_size),
    exact: r.size_exact,
    expanded: r.expanded,
    chunks: r.chunks,
    chunksDone: r.chunks_done,
  };
}
