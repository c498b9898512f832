// Vitest global setup: clears what killed test runs left on the machine's RabbitMQ.
import { sweepStaleTestVhosts } from '@herald/testing';

export default async function setup(): Promise<void> {
  const swept = await sweepStaleTestVhosts();
  if (swept.length > 0) console.log(`test setup: deleted ${swept.length} stale test vhosts left by earlier runs`);
}
