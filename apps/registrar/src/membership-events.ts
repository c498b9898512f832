import { decodeWith, FollowEvent, jsonObjectOf, TopicMembership } from '@herald/contracts';
import type { AppRow, AudienceStore } from '@herald/db';
import type { Logger } from '@herald/logging';

/** The outcomes the registrar returns (registrar.ts's Outcome). */
type Outcome =
  | { kind: 'ack' }
  | { kind: 'retry'; code: string; reason: string; delayMs?: number }
  | { kind: 'park'; code: string; reason: string }
  | { kind: 'defer'; code: string; reason: string; delayMs: number };

export interface MembershipDeps {
  /** Absent: membership events are parked (this registrar was built without the audience store). */
  audiences?: Pick<AudienceStore, 'applyTopicMemberships' | 'applyFollowEvents'>;
  apps: { get(id: string): Promise<AppRow | undefined> };
  logger: Logger;
}

/** The kinds of `push.registrations` message that change audiences rather than devices (issue 20). */
export const MEMBERSHIP_KINDS = ['topic-membership', 'follow'] as const;

/** Whether the message is a topic-membership or follow event (read leniently, before its contract). */
export function isMembershipMessage(body: Buffer): boolean {
  const kind = jsonObjectOf(body)?.['kind'];
  return typeof kind === 'string' && (MEMBERSHIP_KINDS as readonly string[]).includes(kind);
}

type Decoded = { index: number; event: TopicMembership | FollowEvent };

function decode(body: Buffer): { ok: true; event: TopicMembership | FollowEvent } | { ok: false; reason: string } {
  const kind = jsonObjectOf(body)?.['kind'];
  const parsed = kind === 'follow' ? decodeWith(FollowEvent, body) : decodeWith(TopicMembership, body);
  return parsed.ok ? { ok: true, event: parsed.value } : { ok: false, reason: parsed.reason };
}

/**
 * The events whose app exists. A disabled app's events are applied, joins and leaves alike, as the
 * HTTP API and the CLI apply them (memberships are preferences, which outlive a ban): parking them
 * held back every unsubscribe and unfollow sent during an incident, so users got the pushes they
 * had opted out of once the app was enabled again. A disabled app sends nothing, so a join applied
 * meanwhile changes nothing until then.
 */
async function knownApps(decoded: readonly Decoded[], deps: MembershipDeps, outcomes: Outcome[]): Promise<Decoded[]> {
  const ids = [...new Set(decoded.map((d) => d.event.app))];
  const apps = new Map(await Promise.all(ids.map(async (id) => [id, await deps.apps.get(id)] as const)));
  return decoded.filter(({ index, event }) => {
    if (apps.get(event.app) !== undefined) return true;
    outcomes[index] = { kind: 'park', code: 'unknown-app', reason: `unknown app "${event.app}"` };
    return false;
  });
}

/**
 * Applies topic-membership and follow events (last event wins; a stale one is acked). Bad input,
 * an unknown app and an unknown topic are parked with a readable reason. Database errors throw:
 * the registrar retries or defers the messages.
 */
export async function applyMembershipEvents(items: readonly { index: number; body: Buffer }[], deps: MembershipDeps, outcomes: Outcome[]): Promise<void> {
  const decoded: Decoded[] = [];
  for (const { index, body } of items) {
    const r = decode(body);
    if (!r.ok) outcomes[index] = { kind: 'park', code: r.reason.startsWith('malformed JSON') ? 'malformed-json' : 'schema', reason: r.reason };
    else if (deps.audiences === undefined) outcomes[index] = { kind: 'park', code: 'unsupported', reason: `this registrar does not apply ${r.event.kind} events` };
    else decoded.push({ index, event: r.event });
  }
  const valid = await knownApps(decoded, deps, outcomes);
  const topics = valid.flatMap((d) => (d.event.kind === 'topic-membership' ? [{ index: d.index, event: d.event }] : []));
  const follows = valid.flatMap((d) => (d.event.kind === 'follow' ? [{ index: d.index, event: d.event }] : []));
  if (deps.audiences !== undefined && topics.length > 0) {
    const results = await deps.audiences.applyTopicMemberships(
      topics.map(({ event: e }) => ({ app: e.app, topic: e.topic, member: e.device ?? { userId: e.userId ?? '' }, subscribed: e.subscribed, eventAt: e.eventAt })),
    );
    topics.forEach(({ index, event }, i) => {
      outcomes[index] = results[i] === 'unknown-topic' ? { kind: 'park', code: 'unknown-topic', reason: `unknown topic "${event.topic}" of app "${event.app}"` } : { kind: 'ack' };
    });
  }
  if (deps.audiences !== undefined && follows.length > 0) {
    await deps.audiences.applyFollowEvents(follows.map(({ event: e }) => ({ app: e.app, follower: e.follower, followee: e.followee, following: e.following, eventAt: e.eventAt })));
    for (const { index } of follows) outcomes[index] = { kind: 'ack' };
  }
  for (const { index } of items) {
    const o = outcomes[index];
    if (o?.kind === 'park') deps.logger.warn({ outcome: o }, 'membership event parked');
  }
}
