import { Counter, type Registry } from '@herald/runtime';

export interface DemuxerMetrics {
  /** By app ("" for a parked job whose app is not known to exist). */
  jobs: Counter<'outcome' | 'app'>;
  devicePushes: Counter<'platform'>;
  scheduled: Counter<'platform' | 'outcome'>;
  timezoneFallbacks: Counter<'app'>;
  waveOverCapacity: Counter<'platform'>;
  /** Audience fan-out chunks (fanout-chunk.ts) by outcome, and the devices they read. */
  fanoutChunks: Counter<'outcome'>;
  fanoutDevices: Counter;
}

export function createDemuxerMetrics(registry: Registry): DemuxerMetrics {
  return {
    jobs: new Counter({
      name: 'herald_demuxer_jobs_total',
      help: 'Push jobs handled by the demuxer, by outcome (fanned-out, fan-out-started: an audience job handed to the fan-out stage, no-devices, skipped: every device skipped for opt-outs or mutes, expired, cancelled: cancelled while it waited in push.jobs, parked) and app ("" for a job parked before its app was found)',
      labelNames: ['outcome', 'app'],
      registers: [registry],
    }),
    devicePushes: new Counter({
      name: 'herald_demuxer_device_pushes_total',
      help: 'Device pushes emitted to the send queues',
      labelNames: ['platform'],
      registers: [registry],
    }),
    scheduled: new Counter({
      name: 'herald_demuxer_scheduled_pushes_total',
      help: 'Device pushes of scheduled jobs, by outcome (stored for later, due-now, expired before due)',
      labelNames: ['platform', 'outcome'],
      registers: [registry],
    }),
    timezoneFallbacks: new Counter({
      name: 'herald_demuxer_timezone_fallback_total',
      help: 'Device pushes whose local delivery time was read in UTC because the device timezone was missing or unknown, by app',
      labelNames: ['app'],
      registers: [registry],
    }),
    waveOverCapacity: new Counter({
      name: 'herald_scheduled_wave_over_capacity_total',
      help: 'Time windows whose scheduled pushes exceed what the outbound rate can send within them',
      labelNames: ['platform'],
      registers: [registry],
    }),
    fanoutChunks: new Counter({
      name: 'herald_demuxer_fanout_chunks_total',
      help: 'Audience fan-out chunks handled, by outcome (expanded, last: the final chunk, cancelled: its job was cancelled, duplicate: already done, raced: another demuxer linked or planned it first, deferred, parked)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    fanoutDevices: new Counter({
      name: 'herald_demuxer_fanout_devices_total',
      help: 'Devices read by audience fan-outs (skipped ones included)',
      registers: [registry],
    }),
  };
}
