/**
 * `npm run bench:webhooks`: webhook deliveries per second from one webhook-pusher process to a
 * local receiver. Starts an empty system (own vhost and schema), subscribes the receiver, queues
 * WEBHOOK_BENCH_COUNT (default 5,000) deliveries on push.webhook.send, then starts the pusher
 * with its default concurrency settings (4 requests per host, 5 s timeout) and times the first
 * to the last POST the receiver gets. The receiver answers 204 at once and checks every
 * signature. WEBHOOK_BENCH_RECEIVERS (default 1) spreads the subscriptions over that many
 * receivers (destination hosts). Prints the figure and writes test-results/webhook-bench.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { Exchanges, Queues, WebhookHeaders, derivePushId, verifyWebhookSignature, type WebhookDelivery } from '@herald/contracts';
import { createLogger } from '@herald/logging';
import { connectBroker } from '@herald/messaging';
import { waitFor } from '@herald/testing';
import { buildServices } from '../../../infra/local/build-services.ts';
import { startExtraService, startSystem } from '../../../test/support/system.ts';

const COUNT = Number(process.env['WEBHOOK_BENCH_COUNT'] ?? 5000);
const RECEIVERS = Number(process.env['WEBHOOK_BENCH_RECEIVERS'] ?? 1);
const SECRET = 'bench-secret-0123456789abcdef';

interface Receiver {
  url: string;
  server: Server;
}

const received: number[] = [];
let badSignatures = 0;

async function startReceiver(): Promise<Receiver> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push(performance.now());
      if (!verifyWebhookSignature(req.headers[WebhookHeaders.signature] as string | undefined, Buffer.concat(chunks), SECRET).ok) badSignatures++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, server };
}

await buildServices();
const sys = await startSystem({ only: [] });
const receivers = await Promise.all(Array.from({ length: RECEIVERS }, startReceiver));
try {
  const subs = await Promise.all(
    receivers.map((r) => sys.database.db.subscriptions.create({ team: 'bench', callbackUrl: r.url, resourceType: 'campaign', resourceId: '*', secret: SECRET })),
  );
  const broker = await connectBroker({ url: sys.vhost.amqpUrl, logger: createLogger({ service: 'bench', level: 'warn', format: 'json' }), connectionName: 'bench' });
  const queuedAt = new Date().toISOString();
  for (let start = 0; start < COUNT; start += 500) {
    const batch = Array.from({ length: Math.min(500, COUNT - start) }, (_, k) => {
      const i = start + k;
      const sub = subs[i % subs.length];
      const eventId = `bench-${randomUUID()}`;
      const delivery: WebhookDelivery = {
        version: 1,
        notificationId: derivePushId(`change:${eventId}`, sub?.id ?? ''),
        eventId,
        subscriptionId: sub?.id ?? '',
        resource: { type: 'campaign', id: `c-${i}` },
        diff: { budget: { old: i, new: i + 1 }, status: { old: 'draft', new: 'live' } },
        createdAt: queuedAt,
        queuedAt,
      };
      return { exchange: Exchanges.send, routingKey: Queues.webhookSend, body: delivery, messageId: delivery.notificationId };
    });
    await broker.publisher.publishMany(batch);
  }
  await broker.close();
  const cpuBefore = process.cpuUsage();
  await startExtraService(sys, 'webhook-pusher');
  await waitFor(`${COUNT} webhook deliveries`, () => received.length >= COUNT, { timeoutMs: 600_000, intervalMs: 100 });
  const first = received[0] ?? 0;
  const last = received[received.length - 1] ?? 0;
  const perSecond = Math.round(((received.length - 1) * 1000) / (last - first));
  const result = { at: new Date().toISOString(), count: COUNT, receivers: RECEIVERS, received: received.length, badSignatures, seconds: (last - first) / 1000, perSecond };
  console.log(`\nwebhook deliveries: ${received.length} in ${result.seconds.toFixed(2)} s to ${RECEIVERS} local receiver(s), bad signatures: ${badSignatures}`);
  console.log(`(machine: ${os.cpus().length} CPUs, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}; bench process CPU ${Math.round(process.cpuUsage(cpuBefore).user / 1000)} ms)`);
  console.log(`\nwebhook-pusher throughput: ${perSecond} deliveries/s`);
  mkdirSync('test-results', { recursive: true });
  writeFileSync('test-results/webhook-bench.json', `${JSON.stringify(result, null, 2)}\n`);
} finally {
  await sys.stop();
  await Promise.all(receivers.map((r) => new Promise((done) => r.server.close(done))));
}
