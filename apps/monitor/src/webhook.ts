import type { Logger } from '@herald/logging';
import type { AlarmTransition } from '@herald/monitoring';

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

/**
 * Posts payloads one after another (so "resolved" never overtakes its "firing"), each up to three
 * times; never throws: a chat outage must not stop the monitor.
 */
export function createWebhook(url: string, logger: Logger, onFailure: () => void): { post(p: WebhookPayload): void; drain(): Promise<void> } {
  let chain: Promise<void> = Promise.resolve();
  const attempt = async (p: WebhookPayload): Promise<void> => {
    let lastError = '';
    for (const delay of ATTEMPT_DELAYS_MS) {
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(p),
          signal: AbortSignal.timeout(5_000),
        });
        if (res.ok) return;
        lastError = `answered ${res.status}`;
      } catch (err) {
        lastError = (err as Error).message;
      }
    }
    onFailure();
    logger.error({ alarm: p.alarm, queue: p.queue, state: p.state, error: lastError }, 'alarm webhook failed');
  };
  return {
    post: (p) => {
      chain = chain.then(() => attempt(p));
    },
    drain: () => chain,
  };
}
