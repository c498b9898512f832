import type { FastifyInstance, FastifyReply } from 'fastify';
import { Counter, Histogram, type Registry } from '@herald/runtime';

/** Where a job publish spent its time: recording the job id in PostgreSQL, then RabbitMQ's confirm. */
export interface PublishTimings {
  recordMs?: number;
  confirmMs?: number;
}

/** Latency buckets (seconds) for an API whose publish answers in a few milliseconds. */
const BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

export interface RequestMetrics {
  /** Count and time the publish stages, and tell the caller in a Server-Timing header (ms). */
  publishTimings(reply: FastifyReply, timings: PublishTimings): void;
}

/**
 * Every answered request counted by method, route and status, and timed by method and route
 * (`herald_api_requests_total`, `herald_api_request_duration_seconds`); publishes also by stage
 * (`herald_api_publish_stage_seconds{stage="record"|"confirm"}`). Routes are the route patterns
 * (`/v1/jobs/:id`), or `unmatched`, so a scan of random URLs cannot grow the label set.
 */
export function instrumentRequests(app: FastifyInstance, registry: Registry): RequestMetrics {
  const requests = new Counter({
    name: 'herald_api_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'herald_api_request_duration_seconds',
    help: 'Time from a request arriving to its answer being written, by method and route pattern',
    labelNames: ['method', 'route'],
    buckets: BUCKETS,
    registers: [registry],
  });
  const stages = new Histogram({
    name: 'herald_api_publish_stage_seconds',
    help: 'Time a job publish spent recording the job id (record) and waiting for the RabbitMQ confirm (confirm)',
    labelNames: ['stage'],
    buckets: BUCKETS,
    registers: [registry],
  });
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    requests.inc({ method: req.method, route, status: reply.statusCode });
    duration.observe({ method: req.method, route }, reply.elapsedTime / 1000);
  });
  return {
    publishTimings(reply, { recordMs, confirmMs }) {
      const parts: string[] = [];
      for (const [stage, ms] of [['record', recordMs], ['confirm', confirmMs]] as const) {
        if (ms === undefined) continue;
        stages.observe({ stage }, ms / 1000);
        parts.push(`${stage};dur=${ms.toFixed(2)}`);
      }
      // total: from the request's arrival to now, just before the answer is written.
      if (parts.length > 0)
        void reply.header('server-timing', [...parts, `total;dur=${reply.elapsedTime.toFixed(2)}`].join(', '));
    },
  };
}
