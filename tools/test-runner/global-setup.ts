// Vitest global setup: builds the service bundles the e2e tests run, and clears what killed
// test runs left on the machine's RabbitMQ; its teardown stops the local RabbitMQ cluster if the
// cluster tests started it.
import { stopLocalClusterIfTestsStartedIt, sweepStaleTestVhosts, TEST_RUN_PID } from '@herald/testing';
import { buildServices } from '../../infra/local/build-services.ts';

export default async function setup(): Promise<() => Promise<void>> {
  // The workers, started after this, name this run in the cluster's marker (local-cluster.ts).
  process.env[TEST_RUN_PID] = String(process.pid);
  await buildServices();
  const swept = await sweepStaleTestVhosts();
  if (swept.length > 0) console.log(`test setup: deleted ${swept.length} stale test vhosts left by earlier runs`);
  return async () => {
    if (await stopLocalClusterIfTestsStartedIt()) console.log('test teardown: stopped the local RabbitMQ cluster the cluster tests started');
  };
}
