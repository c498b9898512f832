import { describe, expect, it } from 'vitest';
import { DevicePush } from './device-push.ts';
import { parseWith } from './parse.ts';
import { OptOutChange } from './preferences-api.ts';
import { PushJob } from './push-job.ts';
import { Registration } from './registration.ts';
import { webEndpointProblem } from './web-push.ts';

const job = { id: 'j-1', app: 'demo', userId: 'u-1', category: 'social', content: { title: 'Hi' } };
const push = {
  version: 1, pushId: '34092140-bfff-85a9-9832-b24679ab884b', jobId: 'j-1', deviceId: '7', app: 'demo', platform: 'apns', token: 'ab'.repeat(32),
  userId: 'u-1', content: { title: 'Hi' }, priority: 'high', acceptedAt: '2026-11-29T12:00:00Z',
};

// PostgreSQL stores no NUL: a job or push holding one would fail the statement it shares with others.
describe('a NUL character (U+0000) is refused at the door, naming the field', () => {
  it.each([
    ['the title', { content: { title: 'Hi\u0000' } }, 'content.title'],
    ['a data key', { content: { title: 'Hi', data: { 'k\u0000': 'v' } } }, 'content.data.k\u0000'],
    ['a data value', { content: { title: 'Hi', data: { k: 'v\u0000' } } }, 'content.data.k'],
    ['the user', { userId: 'u\u0000' }, 'userId'],
    ['one of the users', { userId: undefined, userIds: ['u-1', 'u\u0000'] }, 'userIds.1'],
    ['the category', { category: 'so\u0000cial' }, 'category'],
    ['the muted object', { objectId: 'thread:\u00002' }, 'objectId'],
    ['the audience topic', { userId: undefined, audience: { topic: 'news\u0000' } }, 'audience.topic'],
  ])('in a job: %s', (_what, change, path) => {
    const parsed = parseWith(PushJob, { ...job, ...change });
    expect(parsed).toEqual({ ok: false, reason: `schema violation: ${path}: must not contain the NUL character (U+0000)` });
  });

  it('a job without one passes, with every other character kept', () => {
    expect(parseWith(PushJob, { ...job, content: { title: 'Hé 🙂\u0001\t' } })).toMatchObject({ ok: true, value: { content: { title: 'Hé 🙂\u0001\t' } } });
  });

  it.each([['deviceId'], ['userId']])('in a device push: its %s', (field) => {
    expect(parseWith(DevicePush, { ...push, [field]: 'x\u0000' })).toEqual({ ok: false, reason: `schema violation: ${field}: must not contain the NUL character (U+0000)` });
    expect(parseWith(DevicePush, push)).toMatchObject({ ok: true });
  });

  // Its job's id: as a PushJob's id (at most 200 printable ASCII characters, push_outcomes' key holds it).
  it('in a device push: its jobId, held to what a job id is', () => {
    expect(parseWith(DevicePush, { ...push, jobId: 'x\u0000' })).toEqual({ ok: false, reason: 'schema violation: jobId: must be printable ASCII without spaces' });
    expect(parseWith(DevicePush, { ...push, jobId: 'x'.repeat(201) })).toMatchObject({ ok: false, reason: expect.stringMatching(/^schema violation: jobId: /) });
  });

  it('in a registration or an opt-out: the user, the category', () => {
    expect(parseWith(Registration, { kind: 'register', app: 'demo', userId: 'u\u0000', platform: 'apns', token: 'ab'.repeat(32), eventAt: '2026-11-29T12:00:00Z' })).toMatchObject({ ok: false, reason: expect.stringContaining('userId: must not contain the NUL character') });
    expect(parseWith(OptOutChange, { app: 'demo', userId: 'u-1', category: 'c\u0000' })).toMatchObject({ ok: false, reason: expect.stringContaining('category: must not contain the NUL character') });
  });

  it('in a Web Push endpoint, as any control character or space', () => {
    expect(webEndpointProblem('https://fcm.googleapis.com/fcm/send/abc\u0000def')).toBe('not a Web Push endpoint: a URL holds no spaces or control characters');
    expect(webEndpointProblem('https://fcm.googleapis.com/fcm/send/abc def')).toBe('not a Web Push endpoint: a URL holds no spaces or control characters');
    expect(webEndpointProblem('https://fcm.googleapis.com/fcm/send/abc-def')).toBeUndefined();
  });
});

// Half a surrogate pair is not Unicode: as text PostgreSQL would keep U+FFFD instead, and jsonb refuses its JSON escape.
describe('half of a UTF-16 surrogate pair alone is refused at the door, naming the field', () => {
  const LONE = 'must be well-formed Unicode: it holds half of a UTF-16 surrogate pair (U+D800–U+DFFF) alone';
  it.each([
    ['the title (a high half at the end)', { content: { title: 'Hi \ud83d' } }, 'content.title'],
    ['a data value (a low half first)', { content: { title: 'Hi', data: { k: '\ude42!' } } }, 'content.data.k'],
    ['a data key', { content: { title: 'Hi', data: { '\ud800k': 'v' } } }, 'content.data.\ud800k'],
    ['the user', { userId: 'u\udfff' }, 'userId'],
    ['one of the users', { userId: undefined, userIds: ['u-1', '\ud800'] }, 'userIds.1'],
    ['the category', { category: 'so\udbffcial' }, 'category'],
    ['the muted object', { objectId: 'thread:\udc002' }, 'objectId'],
    ['an audience job\'s content, which its fan-out stores as jsonb', { userId: undefined, audience: { topic: 'news' }, content: { body: 'a \ud83d b' } }, 'content.body'],
  ])('in a job: %s', (_what, change, path) => {
    expect(parseWith(PushJob, { ...job, ...change })).toEqual({ ok: false, reason: `schema violation: ${path}: ${LONE}` });
  });

  it('whole pairs (emoji beyond the first plane) pass, kept as they are', () => {
    const text = '🙂 𝄞 \ud83d\ude42';
    expect(parseWith(PushJob, { ...job, userId: `u-${text}`, content: { title: text, data: { [text]: text } } })).toMatchObject({ ok: true, value: { userId: `u-${text}`, content: { title: text } } });
  });

  it('in a device push, a registration or an opt-out', () => {
    expect(parseWith(DevicePush, { ...push, deviceId: '7\ud800' })).toEqual({ ok: false, reason: `schema violation: deviceId: ${LONE}` });
    expect(parseWith(Registration, { kind: 'register', app: 'demo', userId: '\udc00u', platform: 'apns', token: 'ab'.repeat(32), eventAt: '2026-11-29T12:00:00Z' })).toMatchObject({ ok: false, reason: expect.stringContaining(`userId: ${LONE}`) });
    expect(parseWith(OptOutChange, { app: 'demo', userId: 'u-1', category: 'c\ud800' })).toMatchObject({ ok: false, reason: expect.stringContaining(`category: ${LONE}`) });
  });
});
