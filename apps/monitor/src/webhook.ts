import type { Logger } from '@herald/logging';
import { TIMED_OUT, within } from '@herald/runtime';
import { credentialsApart, type AlarmTransition } from '@herald/monitoring';

/** What a chat tool (Slack, Mattermost, Google Chat, Teams incoming webhooks) can take: `text`, plus fields for machines. */
export interface WebhookPayload {
  text: string;
  alarm: string;
  queue: string;
  state: 'firing' | 'resolved';
  summary: string;
  value: number;
  threshold: number;
  since: string;
  firedAt: string;
  at: string;
  vhost: string;
}

export function webhookPayload(t: AlarmTransition, vhost: string): WebhookPayload {
  const a = t.alarm;
  const heldFor = Math.round((t.at - a.since) / 1000);
  const text =
    t.state === 'firing'
      ? `[FIRING] Herald ${a.alarm} on ${a.queue} (vhost ${vhost}): ${a.summary}`
      : `[RESOLVED] Herald ${a.alarm} on ${a.queue} (vhost ${vhost}) after ${heldFor} s: ${a.summary}`;
  return {
    text,
    alarm: a.alarm,
    queue: a.queue,
    state: t.state,
    summary: a.summary,
    value: a.value,
    threshold: a.threshold,
    since: new Date(a.since).toISOString(),
    firedAt: new Date(a.firedAt).toISOString(),
    at: new Date(t.at).toISOString(),
    vhost,
  };
}

const ATTEMPT_DELAYS_MS = [0, 500, 2_000];
/** Alarms waiting for the webhook at most (a dead endpoint costs each about 17.5 s); the oldest goes first. */
const MAX_PENDING = 100;
/** The longest Retry-After (429, 503) honoured before the next attempt. */
const MAX_RETRY_AFTER_MS = 30_000;

/** How a post ended: delivered; failed (every attempt, or dropped behind a dead endpoint; logged and counted); abandoned at shutdown. */
export type PostOutcome = 'delivered' | 'failed' | 'abandoned';

export interface AlarmWebhook {
  /** Queues the post; `done` is told how it ended. */
  post(p: WebhookPayload, done?: (outcome: PostOutcome) => void): void;
  drain(withinMs?: number): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A Retry-After in seconds (429, 503), as a wait in ms; 0 for none (an HTTP-date is not read). */
function askedWaitMs(res: Response): number {
  if (res.status !== 429 && res.status !== 503) return 0;
  const seconds = Number(res.headers.get('retry-after'));
  return Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds * 1000, MAX_RETRY_AFTER_MS) : 0;
}

/**
 * Posts payloads one after another (so "resolved" never overtakes its "firing"), each up to three
 * times, the next attempt waiting at least a 429's or 503's Retry-After (up to 30 s); never throws:
 * a chat outage must not stop the monitor. At most `maxPending` wait: beyond that the oldest is
 * dropped (counted as failed and logged), so a burst of transitions to a dead endpoint (a RabbitMQ
 * restart) cannot hold the newest alarms back for minutes.
 */
export function createWebhook(
  url: string,
  logger: Logger,
  onFailure: () => void,
  options: { attemptDelaysMs?: readonly number[]; maxPending?: number } = {},
): AlarmWebhook {
  const delays = options.attemptDelaysMs ?? ATTEMPT_DELAYS_MS;
  // A user and password in the URL go as Basic authorization: fetch refuses such a URL, and its
  // error, which was logged at every attempt, quoted the URL whole (every alarm lost, the password in the log).
  const target = credentialsApart(url);
  const maxPending = options.maxPending ?? MAX_PENDING;
  const pending: Array<{ p: WebhookPayload; done?: ((outcome: PostOutcome) => void) | undefined }> = [];
  let running: Promise<void> | undefined;
  /** Aborted when a bounded drain gives up: the post under way stops, counted once (by the drain). */
  const givenUp = new AbortController();
  const attempt = async (p: WebhookPayload): Promise<PostOutcome> => {
    let lastError = '';
    let asked = 0;
    for (const delay of delays) {
      const pause = Math.max(delay, asked);
      if (pause > 0) await sleep(pause);
      if (givenUp.signal.aborted) return 'abandoned';
      asked = 0;
      try {
        const res = await fetch(target.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(target.authorization !== undefined && { authorization: target.authorization }) },
          body: JSON.stringify(p),
          signal: AbortSignal.any([AbortSignal.timeout(5_000), givenUp.signal]),
        });
        if (res.ok) return 'delivered';
        lastError = `answered ${res.status}`;
        asked = askedWaitMs(res);
      } catch (err) {
        lastError = (err as Error).message;
      }
      if (givenUp.signal.aborted) return 'abandoned';
    }
    onFailure();
    logger.error({ alarm: p.alarm, queue: p.queue, state: p.state, error: lastError }, 'alarm webhook failed');
    return 'failed';
  };
  const run = async (): Promise<void> => {
    for (let next = pending.shift(); next !== undefined; next = pending.shift()) {
      const outcome = await attempt(next.p);
      next.done?.(outcome);
    }
    running = undefined;
  };
  return {
    post: (p, done) => {
      if (pending.length >= maxPending) {
        const dropped = pending.shift() as (typeof pending)[number];
        onFailure();
        logger.error({ alarm: dropped.p.alarm, queue: dropped.p.queue, state: dropped.p.state, waiting: maxPending }, 'alarm webhook behind: the oldest waiting alarm dropped');
        dropped.done?.('failed');
      }
      pending.push({ p, done });
      running ??= run();
    },
    // At shutdown: what is still waiting after `withinMs` is given up, logged and counted, so a
    // failing endpoint cannot hold the process past its stop (whose guard would end it unlogged).
    drain: async (withinMs?: number) => {
      if (withinMs === undefined || running === undefined) return void (await running);
      if ((await within(running, withinMs)) !== TIMED_OUT) return;
      const left = pending.splice(0);
      givenUp.abort();
      for (const { p, done } of left) {
        onFailure();
        logger.error({ alarm: p.alarm, queue: p.queue, state: p.state }, 'alarm webhook not delivered before shutdown');
        done?.('abandoned');
      }
      onFailure(); // the post under way, stopped
      logger.error({ waiting: left.length, withinMs }, 'alarm webhook still posting at shutdown; the post under way is abandoned');
    },
  };
}
