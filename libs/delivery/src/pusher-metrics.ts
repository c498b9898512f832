import { Counter, Gauge, Histogram, type Registry } from '@herald/runtime';
import type { UnrecordedGauge } from './ledger-record.ts';

export interface PusherMetrics {
  pushes: Counter<'platform' | 'app' | 'outcome'>;
  latency: Histogram<'platform'>;
  providerSeconds: Histogram<'platform'>;
  credentialsUnreadable: Counter<'platform' | 'app'>;
  unrecorded: Gauge<'platform'>;
  laneDown: Gauge<'platform' | 'lane'>;
  moved: Counter<'platform' | 'app'>;
}

/** The gauge of pushes accepted and not yet recorded, for one platform's recorder. */
export const unrecordedOf = (metrics: PusherMetrics, platform: string): UnrecordedGauge => ({
  inc: (n) => metrics.unrecorded.inc({ platform }, n),
  dec: (n) => metrics.unrecorded.dec({ platform }, n),
});

export function createPusherMetrics(registry: Registry): PusherMetrics {
  return {
    pushes: new Counter({
      name: 'herald_pushes_total',
      help: 'Device pushes by outcome: delivered, invalid (dead token), expired, cancelled (its job was cancelled: acked unsent), opted-out or muted (its user opted out or muted since the push was made: acked unsent), duplicate (acked unsent), retried, held (its provider is down: deferred without spending an attempt, counted each time), failed (rejected by the provider for good, or refused by Herald without a request as the provider would refuse it: parked), parked (any other reason: a retry that ran out, the delivery limit, a bad message...); parks counted once confirmed',
      labelNames: ['platform', 'app', 'outcome'],
      registers: [registry],
    }),
    latency: new Histogram({
      name: 'herald_push_end_to_end_seconds',
      help: 'Job accepted (a scheduled push: fell due) → provider accepted',
      labelNames: ['platform'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60, 300, 3600],
      registers: [registry],
    }),
    providerSeconds: new Histogram({
      name: 'herald_provider_request_seconds',
      help: 'Time the provider took to answer one push: requests made only (a push Herald refused without a request, SendResult notSent, is not in it)',
      labelNames: ['platform'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
      registers: [registry],
    }),
    credentialsUnreadable: new Counter({
      name: 'herald_pusher_credentials_unreadable_total',
      help: "Pushes retried because this pusher could not open the app's sealed credentials: HERALD_SECRET_KEY unset, or not the key that sealed them (a fault of this replica's deployment; no app is banned for it)",
      labelNames: ['platform', 'app'],
      registers: [registry],
    }),
    unrecorded: new Gauge({
      name: 'herald_pusher_unrecorded_pushes',
      help: 'Pushes a provider accepted (or found expired, cancelled or to a dead token) that this pusher is still trying to record in the ledger (PostgreSQL away, or a write unanswered for 5 s, and those queued behind it): their batch is held until it is back, not stuck',
      labelNames: ['platform'],
      registers: [registry],
    }),
    moved: new Counter({
      name: 'herald_pushes_moved_total',
      help: 'Pushes made for a token that a register replaced since (previousToken), claimed for the token that replaced it, to be sent there instead, once a push (its outcome is counted in herald_pushes_total as any other)',
      labelNames: ['platform', 'app'],
      registers: [registry],
    }),
    laneDown: new Gauge({
      name: 'herald_provider_lane_down',
      help: "1 while this pusher takes a provider lane (the platform's shared connection, an app's own connection, a Web Push push service) to be down: its fresh sends got no answer or a server error (the last PROVIDER_DOWN_MIN_SENDS in a row, over 90% of the minute's, for PROVIDER_DOWN_AFTER_MS or more); its pushes are held, not sent, one trying it again every PROVIDER_DOWN_PROBE_MS (back to 0 when one is answered, or when none came to try it for 24 minutes after it was due: it is then tried by the next push of it)",
      labelNames: ['platform', 'lane'],
      registers: [registry],
    }),
  };
}
