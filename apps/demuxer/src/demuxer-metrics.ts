import { Counter, type Registry } from '@herald/runtime';

export interface DemuxerMetrics {
  jobs: Counter<'outcome'>;
  devicePushes: Counter<'platform'>;
  scheduled: Counter<'platform' | 'outcome'>;
  timezoneFallbacks: Counter;
  waveOverCapacity: Counter<'platform'>;
}

export function createDemuxerMetrics(registry: Registry): DemuxerMetrics {
  return {
    jobs: new Counter({
      name: 'herald_demuxer_jobs_total',
      help: 'Push jobs handled by the demuxer, by outcome (fanned-out, no-devices, skipped: every device skipped for opt-outs or mutes, expired, parked)',
      labelNames: ['outcome'],
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
      help: 'Device pushes whose local delivery time was read in UTC because the device timezone was missing or unknown',
      registers: [registry],
    }),
    waveOverCapacity: new Counter({
      name: 'herald_scheduled_wave_over_capacity_total',
      help: 'Time windows whose scheduled pushes exceed what the outbound rate can send within them',
      labelNames: ['platform'],
      registers: [registry],
    }),
  };
}
