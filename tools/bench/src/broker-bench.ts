/**
 * `npm run bench:broker`: RabbitMQ's own CPU per message, the floor under Herald's per-push figure.
 * Publishes persistent messages the size of a device push (BROKER_BENCH_BYTES, 700) to a quorum
 * queue of its own with publisher confirms, consumes them (prefetch 200) and acks, at a fixed
 * BROKER_BENCH_RATE (3,000 messages/s) for BROKER_BENCH_SECONDS (10) after a 2 s warm-up, and counts
 * the CPU of the node's process tree (the one listening on the AMQP port) per message. Rounds
 * alternate one push per message with BROKER_BENCH_BUNDLE (10) pushes per message (the same pushes
 * in a tenth of the messages), BROKER_BENCH_ROUNDS (3) each; medians on the last lines.
 */
import { connect } from 'amqplib';
import { cpuSpentMs, listenerOf, processTree, sampleCpu, type CpuRow, type CpuSample } from './proc.ts';
import { median } from './stats.ts';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const RATE = env('BROKER_BENCH_RATE', 3_000);
const SECONDS = env('BROKER_BENCH_SECONDS', 10);
const ROUNDS = env('BROKER_BENCH_ROUNDS', 3);
const BYTES = env('BROKER_BENCH_BYTES', 700);
const BUNDLE = env('BROKER_BENCH_BUNDLE', 10);
const AMQP = (process.env['AMQP_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672').split(',')[0] as string;
const WARMUP_MS = 2_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const brokerRows = (root: number): CpuRow[] => [{ name: 'rabbitmq', pids: () => processTree(root) }];

/** One round: `pushesPerMessage` pushes in each message, RATE pushes a second. Returns broker CPU µs per push and per message. */
async function round(brokerPid: number, pushesPerMessage: number): Promise<{ perPush: number; perMessage: number; messages: number }> {
  const conn = await connect(AMQP);
  const pub = await conn.createConfirmChannel();
  const sub = await conn.createChannel();
  const queue = `bench-broker-${process.pid}-${Date.now()}`;
  await pub.assertQueue(queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
  await sub.prefetch(200);
  let consumed = 0;
  let lastTag = 0;
  let acked = 0;
  await sub.consume(queue, (msg) => {
    if (msg === null) return;
    consumed++;
    lastTag = msg.fields.deliveryTag;
  });
  // Acks as the consumers send them: one multiple-ack per event-loop turn.
  const acker = setInterval(() => {
    if (lastTag <= acked) return;
    sub.ack({ fields: { deliveryTag: lastTag } } as never, true);
    acked = lastTag;
  }, 5);
  const body = Buffer.alloc(BYTES * pushesPerMessage, 'x');
  const messageRate = RATE / pushesPerMessage;
  const started = Date.now();
  let published = 0;
  const rows = brokerRows(brokerPid);
  let mark: { cpu: CpuSample; consumed: number } | undefined;
  while (Date.now() - started < WARMUP_MS + SECONDS * 1000) {
    const due = Math.floor(((Date.now() - started) / 1000) * messageRate);
    for (; published < due; published++) pub.publish('', queue, body, { persistent: true });
    if (mark === undefined && Date.now() - started >= WARMUP_MS) mark = { cpu: sampleCpu(rows), consumed };
    await sleep(5);
  }
  await pub.waitForConfirms();
  const end = { cpu: sampleCpu(rows), consumed };
  clearInterval(acker);
  const m = mark as NonNullable<typeof mark>;
  const messages = end.consumed - m.consumed;
  await pub.deleteQueue(queue);
  await conn.close();
  const cpuUs = (cpuSpentMs(m.cpu, end.cpu).get('rabbitmq') ?? 0) * 1000;
  return { perPush: cpuUs / (messages * pushesPerMessage), perMessage: cpuUs / messages, messages };
}

const port = Number(new URL(AMQP).port || 5672);
const brokerPid = listenerOf(port);
if (brokerPid === undefined) throw new Error(`no process listens on ${port}: is RabbitMQ running (bash infra/local/services.sh)?`);
const results: Record<string, number[]> = { one: [], bundled: [] };
for (let i = 0; i < ROUNDS; i++) {
  for (const [label, perMessage] of [['one', 1], ['bundled', BUNDLE]] as const) {
    const r = await round(brokerPid, perMessage);
    (results[label] as number[]).push(r.perPush);
    console.log(`round ${i + 1}, ${perMessage} push(es) a message: broker CPU ${r.perPush.toFixed(1)} µs a push, ${r.perMessage.toFixed(1)} µs a message (${r.messages} messages)`);
  }
}
console.log(`RabbitMQ CPU per push at ${RATE} pushes/s, quorum queue, persistent, confirmed, acked (median of ${ROUNDS}):`);
console.log(`  one push a message: ${median(results['one'] as number[]).toFixed(1)} µs`);
console.log(`  ${BUNDLE} pushes a message: ${median(results['bundled'] as number[]).toFixed(1)} µs`);
