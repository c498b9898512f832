import { describe, expect, it } from 'vitest';
import { parseWith } from './parse.ts';
import { TopicCreate, TopicMembership, TopicQuery } from './topic-membership.ts';

const DOTS_ONLY = 'must not be dots only ("." and ".." cannot be reached by URL)';

describe('topic names', () => {
  // HTTP clients collapse the path segments "." and ".." (RFC 3986 §5.2.4): a topic named so was
  // created (201) and then never reached by GET, DELETE or POST /v1/topics/:name/subscriptions.
  it.each(['.', '..', '...'])('refuses %j at creation, naming the field', (name) => {
    expect(parseWith(TopicCreate, { name })).toEqual({ ok: false, reason: `schema violation: name: ${DOTS_ONLY}` });
  });

  it('refuses a membership event naming such a topic, naming the field', () => {
    expect(parseWith(TopicMembership, { kind: 'topic-membership', app: 'demo', topic: '..', userId: 'u', subscribed: true, eventAt: '2026-01-01T00:00:00Z' })).toEqual({
      ok: false,
      reason: `schema violation: topic: ${DOTS_ONLY}`,
    });
  });

  it.each(['.news', 'news.', 'v1.2', 'a..b', '~', '_'])('takes %j', (name) => {
    expect(parseWith(TopicCreate, { name }).ok).toBe(true);
  });

  it('pages after any name a listing may end on', () => {
    expect(parseWith(TopicQuery, { after: '..' }).ok).toBe(true);
    expect(parseWith(TopicQuery, { after: 'a b' }).ok).toBe(false);
  });
});
