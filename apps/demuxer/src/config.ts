import { commonConfig, int, ledgerRetentionConfig, retryScheduleConfig, pushPackConfig, scheduleHorizonConfig, type ConfigOf } from '@herald/config';

export const demuxerConfig = {
  ...commonConfig,
  ...pushPackConfig,
  DEMUXER_PREFETCH: int('Unacknowledged jobs the demuxer holds at once', { default: '200', min: 1 }),
  DEMUXER_BATCH_SIZE: int('Jobs targeted together with one database query', { default: '100', min: 1 }),
  DEMUXER_BATCH_WAIT_MS: int(
    'How long jobs arriving while a batch is being handled may wait to fill the next one, before it starts alongside (at most DEMUXER_BATCHES_IN_FLIGHT at once; a job arriving while none is being handled goes at once)',
    { default: '10', min: 0 },
  ),
  DEMUXER_BATCH_USERS: int(
    'Target users handled together: a batch of jobs is targeted, recorded and published in parts of at most this many users (a job naming more goes alone), so the device pushes a batch holds in memory follow its users, not its job count',
    { default: '1000', min: 1 },
  ),
  DEMUXER_BATCHES_IN_FLIGHT: int('Batches of jobs handled at once; jobs arriving meanwhile wait and go together as the next batch', { default: '2', min: 1 }),
  ...retryScheduleConfig,
  APP_CACHE_TTL_MS: int('How long app settings are cached', { default: '5000', min: 0 }),
  ...scheduleHorizonConfig,
  SCHEDULE_DUE_SLACK_MS: int('A scheduled push due within this much of now is sent at once instead of stored', { default: '1000', min: 0 }),
  SCHEDULE_WARN_RATE_PER_S: int('Outbound rate a scheduled wave is compared with: more pushes per window than this × window warns', {
    default: '2000',
    min: 1,
  }),
  FANOUT_CHUNK_SIZE: int('Audience fan-outs: member devices read and sent per chunk (one checkpoint each)', { default: '1000', min: 1, max: 50000 }),
  FANOUT_PREFETCH: int('Audience fan-outs: chunks this demuxer expands at once (push.fanout prefetch; the webhook-fanout reads WEBHOOK_FANOUT_PREFETCH)', { default: '2', min: 1, max: 16 }),
  SCHEDULE_WARN_WINDOW_S: int('Window (seconds) over which scheduled waves are counted for that warning', { default: '60', min: 1 }),
  JOB_RETENTION_DAYS: int(
    "Jobs accepted and demuxed (or taken again after a park), and with no push of theirs due (deliverAt), longer ago than this are deleted with their push outcomes (job status) and fan-out checkpoints, unless pushes of theirs are still stored for later or their fan-out still runs (up to 30 days since it began or ended expanding, or this if longer); after it a job's id may be used again, once LEDGER_RETENTION_HOURS have also passed since its last push was sent (a push replayed from a parked queue, or paced by its app's budget, is remembered that long from its send). Must be longer than LEDGER_RETENTION_HOURS",
    { default: '30', min: 1 },
  ),
  ...ledgerRetentionConfig,
  JOB_PRUNE_INTERVAL_MS: int('How often each demuxer prunes jobs past JOB_RETENTION_DAYS (demuxers side by side skip each other\'s rows)', { default: '3600000', min: 1000 }),
} as const;

/**
 * JOB_RETENTION_DAYS must outlast LEDGER_RETENTION_HOURS: after a job is pruned its id may be used
 * again, and the new job derives the same push ids; while the ledger still held them done, each
 * of its pushes was acked unsent as a duplicate.
 */
export function demuxerConfigProblems(config: Pick<ConfigOf<typeof demuxerConfig>, 'JOB_RETENTION_DAYS' | 'LEDGER_RETENTION_HOURS'>): string[] {
  if (config.JOB_RETENTION_DAYS * 24 > config.LEDGER_RETENTION_HOURS) return [];
  return [
    `JOB_RETENTION_DAYS (${config.JOB_RETENTION_DAYS} days) must be longer than LEDGER_RETENTION_HOURS (${config.LEDGER_RETENTION_HOURS} h): a job id used again after its job was pruned would find its pushes done in the pushers' ledger, and none would go`,
  ];
}
