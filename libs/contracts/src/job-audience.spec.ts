import { describe, expect, it } from 'vitest';
import { PushJob, targetUsers } from './push-job.ts';

const base = { id: 'j1', app: 'demo', category: 'news', content: { title: 'hi' } };
const issues = (input: object): string[] => {
  const r = PushJob.safeParse({ ...base, ...input });
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('PushJob audience', () => {
  it('takes a topic, followers (with activeWithinDays / mostRecent) or a broadcast, each with a segment', () => {
    expect(issues({ audience: { topic: 'breaking-news' } })).toEqual([]);
    expect(issues({ audience: { followersOf: 'artist-1', activeWithinDays: 30, mostRecent: 500 } })).toEqual([]);
    expect(issues({ audience: { broadcast: true, segment: 'platform = "apns"' } })).toEqual([]);
    const job = PushJob.parse({ ...base, audience: { topic: 't' } });
    expect(targetUsers(job)).toEqual([]);
  });

  it('wants exactly one of userId, userIds and audience', () => {
    expect(issues({ userId: 'u', audience: { topic: 't' } })).toEqual(['userId: give exactly one of userId, userIds or audience']);
    expect(issues({})).toEqual(['userId: give exactly one of userId, userIds or audience']);
  });

  it('wants exactly one of topic, followersOf and broadcast, naming the field', () => {
    expect(issues({ audience: { topic: 't', broadcast: true } })).toEqual(['audience.topic: give exactly one of topic, followersOf or broadcast']);
    expect(issues({ audience: { segment: 'platform = "apns"' } })).toEqual(['audience.topic: give exactly one of topic, followersOf or broadcast']);
  });

  it('takes activeWithinDays and mostRecent only with followersOf, within bounds', () => {
    expect(issues({ audience: { topic: 't', mostRecent: 5 } })).toEqual(['audience.mostRecent: only with followersOf']);
    expect(issues({ audience: { followersOf: 'a', activeWithinDays: 366 } })[0]).toMatch(/^audience\.activeWithinDays: /);
    // No more than the follower index holds: a larger one reached that many and said otherwise.
    expect(issues({ audience: { followersOf: 'a', mostRecent: 10_001 } })).toEqual(['audience.mostRecent: Too big: expected number to be <=10000']);
    expect(issues({ audience: { followersOf: 'a', mostRecent: 10_000 } })).toEqual([]);
  });

  it('refuses a segment it cannot parse, naming audience.segment and the column', () => {
    const [issue] = issues({ audience: { broadcast: true, segment: 'platform = "apns" and (' } });
    expect(issue).toMatch(/^audience\.segment: .*column \d+/);
  });
});
