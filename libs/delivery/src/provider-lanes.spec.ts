import { createLogger } from '@herald/logging';
import type { SendResult } from '@herald/providers';
import { Gauge, Registry } from '@herald/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { ProviderLanes } from './provider-lanes.ts';

const logger = createLogger({ service: 'provider-lanes-spec', level: 'silent', format: 'json' });
const outage: SendResult = { kind: 'transient', reason: 'transport: connect ECONNREFUSED', outage: true };
const delivered: SendResult = { kind: 'delivered' };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let open: ProviderLanes[] = [];
afterEach(() => {
  for (const l of open) l.close();
  open = [];
});

function lanes({ afterMs = 0, quietMs = 60_000, now }: { afterMs?: number; quietMs?: number; now?: () => number } = {}): { lanes: ProviderLanes; gauge: Gauge<'platform' | 'lane'> } {
  const gauge = new Gauge({ name: 'lane_down', help: 'x', labelNames: ['platform', 'lane'] as const, registers: [new Registry()] });
  const l = new ProviderLanes({ holdMs: 60_000, probeMs: 150, minSends: 5, afterMs, quietMs }, 'apns', logger, gauge, now);
  open.push(l);
  return { lanes: l, gauge };
}

/** `n` fresh sends of `lane` answered `answer`, one after another; how many reached the provider. */
async function sendMany(l: ProviderLanes, lane: string, n: number, answer: SendResult): Promise<{ reached: number; results: Array<SendResult | { kind: 'held' }> }> {
  let reached = 0;
  const results = [];
  for (let i = 0; i < n; i++) {
    results.push(
      await l.send(
        lane,
        async () => {
          reached++;
          return answer;
        },
        true,
      ),
    );
  }
  return { reached, results };
}

const gaugeOf = async (g: Gauge<'platform' | 'lane'>, lane: string): Promise<number | undefined> =>
  (await g.get()).values.find((v) => v.labels['lane'] === lane)?.value;

describe('ProviderLanes: a lane whose sends all fail for want of an answer is taken down, its pushes held until one gets an answer', () => {
  it('takes a lane down after minSends outage answers, holds what follows unsent, and one trial after probeMs brings it back', async () => {
    const { lanes: l, gauge } = lanes();
    const first = await sendMany(l, 'apns', 5, outage);
    // Every one sent, each answered as it was (the pusher decides what a failure while down means).
    expect(first.reached).toBe(5);
    expect(first.results).toEqual(Array(5).fill(outage));
    expect(l.down('apns')).toBe(true);
    expect(l.downForMs('apns')).toBeLessThan(5_000);
    expect(await gaugeOf(gauge, 'apns')).toBe(1);
    const held = await sendMany(l, 'apns', 3, delivered);
    expect(held).toEqual({ reached: 0, results: Array(3).fill({ kind: 'held' }) });

    await sleep(250);
    expect(l.down('apns')).toBe(false); // due its trial: pushes are let through to try it
    let release!: () => void;
    const answered = new Promise<void>((r) => (release = r));
    const trial = l.send(
      'apns',
      async () => {
        await answered;
        return delivered;
      },
      true,
    );
    // While the trial is out, the others are held.
    expect(await sendMany(l, 'apns', 2, delivered)).toEqual({ reached: 0, results: Array(2).fill({ kind: 'held' }) });
    release();
    expect(await trial).toEqual(delivered);
    expect(l.downSince('apns')).toBeUndefined();
    expect(await gaugeOf(gauge, 'apns')).toBe(0);
    expect(await sendMany(l, 'apns', 3, delivered)).toMatchObject({ reached: 3 });
  });

  it('a trial that fails keeps the lane down since it first went down', async () => {
    const { lanes: l } = lanes();
    await sendMany(l, 'apns', 5, outage);
    const since = l.downSince('apns');
    await sleep(250);
    expect(await sendMany(l, 'apns', 1, outage)).toEqual({ reached: 1, results: [outage] });
    expect(l.down('apns')).toBe(true);
    expect(l.downSince('apns')).toBe(since);
  });

  it('answers about the push or the app (a refusal, a quota, a Retry-After), or too few sends, never take a lane down', async () => {
    const { lanes: l } = lanes();
    await sendMany(l, 'apns', 10, { kind: 'permanent', reason: 'BadTopic' });
    await sendMany(l, 'apns', 10, { kind: 'transient', reason: 'TooManyRequests', retryAfterMs: 1000 });
    await sendMany(l, 'apns', 10, { kind: 'transient', reason: 'ServiceUnavailable', serverError: true, retryAfterMs: 1000 });
    expect(l.down('apns')).toBe(false);
    await sendMany(l, 'fcm', 4, outage);
    expect(l.down('fcm')).toBe(false);
  });

  // Before: an endpoint refused for its address (or a key not held) was read as the push service's
  // answer, so a trial refused so lifted a lane still down, and refusals between its outage answers
  // ended their row, so the outage never took the lane down.
  it('a push refused before it was sent (notSent) is no answer: no trial of a down lane, no end of a row of failures', async () => {
    const refused: SendResult = { kind: 'permanent', reason: 'endpoint-address-refused: push.example resolves to 10.0.0.5, not a public address', notSent: true };
    const { lanes: l, gauge } = lanes();
    await sendMany(l, 'push.example', 5, outage);
    const since = l.downSince('push.example');
    await sleep(250);
    // Its trial refused unsent: returned as it was, and the lane still down and due its trial.
    expect(await sendMany(l, 'push.example', 1, refused)).toEqual({ reached: 1, results: [refused] });
    expect(l.downSince('push.example')).toBe(since);
    expect(await gaugeOf(gauge, 'push.example')).toBe(1);
    // The next push is the trial: the outage goes on, so the lane stays down (not sent into it unjudged).
    expect(await sendMany(l, 'push.example', 1, outage)).toEqual({ reached: 1, results: [outage] });
    expect(l.down('push.example')).toBe(true);
    expect(l.downSince('push.example')).toBe(since);

    // Refusals between an outage's answers do not end their row: the lane goes down all the same.
    for (let i = 0; i < 5; i++) {
      await sendMany(l, 'apns', 1, outage);
      await sendMany(l, 'apns', 1, refused);
    }
    expect(l.down('apns')).toBe(true);
    // Nor do those of pushes sent before.
    for (let i = 0; i < 4; i++) await sendMany(l, 'fcm', 1, outage);
    expect(await l.send('fcm', async () => refused, false)).toEqual(refused);
    await sendMany(l, 'fcm', 1, outage);
    expect(l.down('fcm')).toBe(true);
  });

  it("a push sent before (a retry, one held after its send): its answer does not count while the lane is up, and it may be the trial of a lane due one", async () => {
    const { lanes: l } = lanes();
    const retry = async (answer: SendResult): Promise<SendResult | { kind: 'held' }> => l.send('apns', async () => answer, false);
    for (let i = 0; i < 20; i++) expect(await retry(outage)).toEqual(outage);
    expect(l.down('apns')).toBe(false);
    await sendMany(l, 'apns', 5, outage);
    expect(await retry(delivered)).toEqual({ kind: 'held' });
    await sleep(250);
    // A quiet lane with only retries to send comes back up with the first one answered.
    expect(await retry(delivered)).toEqual(delivered);
    expect(l.downSince('apns')).toBeUndefined();
  });

  it('a lane half of whose sends are answered stays up; lanes are judged apart', async () => {
    const { lanes: l } = lanes();
    for (let i = 0; i < 10; i++) {
      await sendMany(l, 'apns', 1, outage);
      await sendMany(l, 'apns', 1, delivered);
    }
    expect(l.down('apns')).toBe(false);
    await sendMany(l, 'push.example', 5, outage);
    expect(l.down('push.example')).toBe(true);
    expect(l.down('apns')).toBe(false);
    expect(await sendMany(l, 'apns', 1, delivered)).toMatchObject({ reached: 1 });
  });

  it("a burst of failures shorter than afterMs (one dropped connection's streams) does not take a lane down; failures lasting it do", async () => {
    let clock = 1_000_000;
    const { lanes: l } = lanes({ afterMs: 5_000, now: () => clock });
    await sendMany(l, 'apns', 50, outage);
    expect(l.down('apns')).toBe(false);
    clock += 4_000;
    await sendMany(l, 'apns', 1, outage);
    expect(l.down('apns')).toBe(false);
    clock += 1_000;
    await sendMany(l, 'apns', 1, outage);
    expect(l.down('apns')).toBe(true);

    // A burst, the lane answering since, and one more failure past afterMs: over, not lasting.
    await sendMany(l, 'fcm', 50, outage);
    clock += 1_000;
    await sendMany(l, 'fcm', 5, delivered);
    clock += 4_100;
    await sendMany(l, 'fcm', 1, outage);
    expect(l.down('fcm')).toBe(false);
  });

  it('failures minutes apart do not add up: the minute must hold minSends of them; an answered retry ends a row', async () => {
    let clock = 1_000_000;
    const { lanes: l } = lanes({ now: () => clock });
    await sendMany(l, 'apns', 4, outage);
    clock += 120_000;
    await sendMany(l, 'apns', 1, outage);
    expect(l.down('apns')).toBe(false);
    await sendMany(l, 'fcm', 4, outage);
    expect(await l.send('fcm', async () => delivered, false)).toEqual(delivered);
    await sendMany(l, 'fcm', 1, outage);
    expect(l.down('fcm')).toBe(false);
  });

  it('comes back up with an empty window: one failure after a recovery does not take it down again', async () => {
    const { lanes: l } = lanes();
    await sendMany(l, 'apns', 30, outage);
    await sleep(250);
    expect(await sendMany(l, 'apns', 1, delivered)).toMatchObject({ reached: 1 });
    expect(l.down('apns')).toBe(false);
    await sendMany(l, 'apns', 1, outage);
    expect(l.down('apns')).toBe(false);
  });

  it('a lane due its trial that no push comes to try for quietMs is no longer said down (gauge 0), and its next push still tries it', async () => {
    const { lanes: l, gauge } = lanes({ quietMs: 450 });
    await sendMany(l, 'apns', 5, outage);
    expect(await gaugeOf(gauge, 'apns')).toBe(1);
    await sleep(300);
    expect(await gaugeOf(gauge, 'apns')).toBe(1); // due its trial, but quietMs is not over
    await sleep(150 + 450 - 300 + 100);
    expect(await gaugeOf(gauge, 'apns')).toBe(0);
    // A held push back late, already sent (not a judge of an up lane): it is the trial, and the
    // lane still failing, said down again, the others beside it held.
    const retry = (answer: SendResult) => l.send('apns', async () => answer, false);
    expect(await retry(outage)).toEqual(outage);
    expect(await gaugeOf(gauge, 'apns')).toBe(1);
    expect(await retry(delivered)).toEqual({ kind: 'held' });
    // Down again from that trial, not from before the quiet spell.
    expect(l.downForMs('apns')).toBeLessThan(100);
  });

  it('holds nothing when PROVIDER_DOWN_HOLD_MS is 0', async () => {
    const l = new ProviderLanes({ holdMs: 0, probeMs: 150, minSends: 5, afterMs: 0, quietMs: 60_000 }, 'apns', logger);
    open.push(l);
    expect(await sendMany(l, 'apns', 20, outage)).toMatchObject({ reached: 20 });
    expect(l.down('apns')).toBe(false);
  });
});
