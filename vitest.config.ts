import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    globalSetup: ['tools/test-runner/global-setup.ts'],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['libs/*/src/**/*.spec.ts', 'apps/*/src/**/*.spec.ts', 'infra/k8s/**/*.spec.ts'],
          exclude: ['**/*.int.spec.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['libs/*/src/**/*.int.spec.ts', 'apps/*/src/**/*.int.spec.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.spec.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
          // Its own group after unit + integration (Vitest would otherwise run it after every numbered group).
          sequence: { groupOrder: 1 },
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
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
