/**
 * `npm run bench:broker`: RabbitMQ's own CPU per message, the floor under Herald's per-push figure.
 * Publishes persistent messages the size of a device push (BROKER_BENCH_BYTES, 700) the way
 * Herald publishes jobs (mandatory, with a message id, through a topic exchange to a work queue
 * declared with Herald's arguments: quorum, delivery limit, at-least-once dead-lettering; device
 * pushes go to their send queue through the default exchange, ADR 0005, the third kind below) with
 * publisher confirms, consumes them (prefetch 200) and acks, at a fixed BROKER_BENCH_RATE (3,000
 * pushes/s) for BROKER_BENCH_SECONDS (10) after a 2 s warm-up, and counts the CPU of the node's
 * process tree (the one listening on the AMQP port) per message. Each round runs three kinds, in
 * an order that reverses every round: one push a message; BROKER_BENCH_BUNDLE (10) pushes a
 * message (the same pushes in a tenth of the messages); and one push a message published to the
 * default exchange, which routes by queue name without a binding (what routing through an
 * exchange costs). BROKER_BENCH_ROUNDS (3) rounds; medians on the last lines.
 */
import { connect } from 'amqplib';
import { workQueueSpec } from '@herald/messaging';
import { cpuSpentMs, listenerOf, processTree, sampleCpu, type CpuRow, type CpuSample } from './proc.ts';
import { alternating, median } from './stats.ts';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const RATE = env('BROKER_BENCH_RATE', 3_000);
const SECONDS = env('BROKER_BENCH_SECONDS', 10);
const ROUNDS = env('BROKER_BENCH_ROUNDS', 3);
const BYTES = env('BROKER_BENCH_BYTES', 700);
const BUNDLE = env('BROKER_BENCH_BUNDLE', 10);
const AMQP = (process.env['AMQP_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672').split(',')[0] as string;
const WARMUP_MS = 2_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Kind = 'one' | 'bundled' | 'default-exchange';
const KINDS: readonly Kind[] = ['one', 'bundled', 'default-exchange'];
const LABEL: Record<Kind, string> = {
  one: 'one push a message, topic exchange',
  bundled: `${BUNDLE} pushes a message, topic exchange`,
  'default-exchange': 'one push a message, default exchange',
};

const brokerRows = (root: number): CpuRow[] => [{ name: 'rabbitmq', pids: () => processTree(root) }];

/** One round of `kind`, RATE pushes a second. Returns broker CPU µs per push and per message. */
async function round(brokerPid: number, kind: Kind): Promise<{ perPush: number; perMessage: number; messages: number }> {
  const pushesPerMessage = kind === 'bundled' ? BUNDLE : 1;
  const conn = await connect(AMQP);
  const pub = await conn.createConfirmChannel();
  const sub = await conn.createChannel();
  const queue = `bench-broker-${process.pid}-${Date.now()}`;
  const exchange = `${queue}.exchange`;
  await pub.assertExchange(exchange, 'topic', { durable: true, autoDelete: false });
  await pub.assertQueue(queue, { durable: true, arguments: workQueueSpec(queue, exchange).arguments });
  await pub.bindQueue(queue, exchange, queue);
  const [target, routingKey] = kind === 'default-exchange' ? ['', queue] : [exchange, queue];
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
    for (; published < due; published++) {
      pub.publish(target, routingKey, body, { persistent: true, mandatory: true, messageId: `m${published}`, contentType: pushesPerMessage === 1 ? 'application/json' : 'application/x-ndjson' });
    }
    if (mark === undefined && Date.now() - started >= WARMUP_MS) mark = { cpu: sampleCpu(rows), consumed };
    await sleep(5);
  }
  await pub.waitForConfirms();
  const end = { cpu: sampleCpu(rows), consumed };
  clearInterval(acker);
  const m = mark as NonNullable<typeof mark>;
  const messages = end.consumed - m.consumed;
  await pub.deleteQueue(queue);
  await pub.deleteExchange(exchange);
  await conn.close();
  const cpuUs = (cpuSpentMs(m.cpu, end.cpu).get('rabbitmq') ?? 0) * 1000;
  return { perPush: cpuUs / (messages * pushesPerMessage), perMessage: cpuUs / messages, messages };
}

const port = Number(new URL(AMQP).port || 5672);
const brokerPid = listenerOf(port);
if (brokerPid === undefined) throw new Error(`no process listens on ${port}: is RabbitMQ running (bash infra/local/services.sh)?`);
const results = new Map<Kind, number[]>(KINDS.map((k) => [k, []]));
/** Per round: one push a message through the exchange less the same through the default exchange, µs a message. */
const routing: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  for (const kind of alternating(KINDS, i)) {
    const r = await round(brokerPid, kind);
    results.get(kind)?.push(r.perPush);
    console.log(`round ${i + 1}, ${LABEL[kind]}: broker CPU ${r.perPush.toFixed(1)} µs a push, ${r.perMessage.toFixed(1)} µs a message (${r.messages} messages)`);
  }
  // One push a message, so µs a push is µs a message.
  routing.push((results.get('one')?.[i] ?? 0) - (results.get('default-exchange')?.[i] ?? 0));
}
const med = (kind: Kind): number => median(results.get(kind) ?? []);
console.log(`RabbitMQ CPU per push at ${RATE} pushes/s, quorum work queue, persistent, mandatory, confirmed, acked (median of ${ROUNDS}):`);
for (const kind of KINDS) console.log(`  ${LABEL[kind]}: ${med(kind).toFixed(1)} µs`);
console.log(`  routing through the topic exchange: ${median(routing).toFixed(1)} µs a message (the median of the rounds' differences)`);
