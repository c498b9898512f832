import { defineConfig } from 'vitest/config';

/**
 * Files whose assertions time something (rates, alarm delays, restart back-offs, bounds after a
 * cancel or a fault): they run in the `timed` project, alone.
 */
const TIMED_LIBS = [
  'libs/rate-limiter/src/rate-limiter.spec.ts',
  'libs/db/src/rate-limit-repository.int.spec.ts',
  'libs/delivery/src/run-pusher.int.spec.ts',
  // Its spread of deferred messages is a spread in time: a loaded CPU stalls the relay's timers past
  // the window, and they came back in one instant (clean-clone CI, 2026-12-06 19:49).
  'libs/messaging/src/retry.int.spec.ts',
];
const TIMED_E2E = [
  'test/e2e/start-lifecycle.spec.ts',
  'test/e2e/outage-replay.spec.ts',
  'test/e2e/rate-limit.spec.ts',
  'test/e2e/monitor.spec.ts',
  'test/e2e/fanout.spec.ts',
  'test/e2e/crash-recovery.spec.ts',
  'test/e2e/provider-backoff.spec.ts',
  'test/e2e/app-budget.spec.ts',
  'test/e2e/webhooks.spec.ts',
  'test/e2e/app-ban.spec.ts',
  'test/e2e/scheduling.spec.ts',
];

export default defineConfig({
  test: {
    // Vitest's default is one worker fewer than the CPUs: one on a two-core machine, and the
    // unit and integration files mostly wait on RabbitMQ and PostgreSQL. (The e2e project runs two
    // files at a time; timed and chaos one.)
    maxWorkers: 3,
    globalSetup: ['tools/test-runner/global-setup.ts'],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['libs/*/src/**/*.spec.ts', 'apps/*/src/**/*.spec.ts', 'tools/*/src/**/*.spec.ts', 'infra/k8s/**/*.spec.ts'],
          exclude: ['**/*.int.spec.ts', ...TIMED_LIBS],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['libs/*/src/**/*.int.spec.ts', 'apps/*/src/**/*.int.spec.ts', 'tools/*/src/**/*.int.spec.ts'],
          exclude: TIMED_LIBS,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.spec.ts'],
          exclude: TIMED_E2E,
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // Two files at a time, each on its own vhost, schema, state directory and free ports;
          // a worker keeps the loaded modules between files (each file starts its services as
          // processes of their own, so no state is shared through them).
          maxWorkers: 2,
          isolate: false,
          // Its own group after unit + integration (Vitest would otherwise run it after every numbered group).
          sequence: { groupOrder: 1 },
        },
      },
      {
        // The files that measure rates, delays or time bounds: one at a time, with nothing else
        // running, so what they time is Herald and not a neighbouring test.
        test: {
          name: 'timed',
          include: [...TIMED_LIBS, ...TIMED_E2E],
          testTimeout: 300_000,
          hookTimeout: 120_000,
          fileParallelism: false,
          isolate: false,
          sequence: { groupOrder: 2 },
        },
      },
      {
        // Restarts the machine's RabbitMQ and PostgreSQL: runs alone, after every other project.
        // Short form in `npm test`; `npm run chaos` (CHAOS_LONG=1) is the long form.
        test: {
          name: 'chaos',
          include: ['test/chaos/**/*.spec.ts'],
          testTimeout: 300_000,
          hookTimeout: 600_000,
          fileParallelism: false,
          sequence: { groupOrder: 3 },
        },
      },
    ],
  },
});
