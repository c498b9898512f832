import { derivePushId, effectivePushType, isNowOrNever, jobExpiry, localTimeBounds, type DevicePush, type Platform, type PushJob } from '@herald/contracts';
import { apnsRequestParts } from './apns-notification.ts';
import { apnsRequestProblem, HERALD_MAX_STORAGE_S } from './apns-rules.ts';
import { buildFcmMessage } from './fcm-message.ts';
import { fcmForwardedToIosProblem, fcmMessageProblem } from './fcm-rules.ts';
import { buildWebRequest, webShowsText } from './web-payload.ts';
import { webRequestProblem } from './web-rules.ts';

/** A problem a job's pushes would have with a provider: the field it comes from and why. */
export interface ConformanceIssue {
  path: string;
  message: string;
}

type JobPart = Pick<PushJob, 'id' | 'app' | 'content' | 'priority' | 'collapseKey' | 'ttl' | 'expiresAt'>;

/** Tokens of the right shape: the checks below are about the content, not the device. */
const SAMPLE_TOKEN: Record<Platform, string> = { apns: '0'.repeat(64), fcm: `sample:${'A'.repeat(140)}`, web: 'https://push.example.com/sample' };
const PROVIDER_NAME: Record<Platform, string> = { apns: 'APNs', fcm: 'FCM', web: 'Web Push' };
/** An id of the right shape and length (it becomes apns-id, and part of a Web Push payload); the rules do not depend on its value. */
const SAMPLE_PUSH_ID = derivePushId('sample', 'sample');

/**
 * The platforms a job's pushes go to. Voip and Live Activity pushes (by pushType or the
 * apns-push-type override) reach only APNs tokens registered for them. A push with no text for a
 * browser to show (a background one, or an alert of only a badge or a sound) reaches browsers only
 * when the job opts in with `content.web`: Safari does not support invisible pushes and revokes a
 * site's permission when its service worker shows no notification (Apple, "Sending web push
 * notifications in web apps and browsers"), and Chrome shows its own "site updated in the
 * background" notice instead. Every other push reaches every platform.
 */
export function platformsFor(content: PushJob['content']): Platform[] {
  const type = effectivePushType(content);
  if (type === 'voip' || type === 'liveactivity') return ['apns'];
  return webShowsText(content) || content.web !== undefined ? ['apns', 'fcm', 'web'] : ['apns', 'fcm'];
}

/** When a job's sample pushes were accepted and expire, whatever their platform: worked out once a job, not once a platform. */
interface SampleTiming {
  acceptedAt: string;
  expiresAt: string | undefined;
  nowOrNever: boolean;
}

/** Throws, as toISOString does, for a `now` (or an expiry from it) that is no date. */
function sampleTiming(job: JobPart, now: Date): SampleTiming {
  const expiresAt = job.expiresAt ?? (job.ttl !== undefined && job.ttl > 0 ? new Date(now.getTime() + job.ttl * 1000).toISOString() : undefined);
  const nowOrNever = isNowOrNever(job);
  return { acceptedAt: now.toISOString(), expiresAt, nowOrNever };
}

function samplePush(job: JobPart, platform: Platform, timing: SampleTiming): DevicePush {
  const push: DevicePush = {
    version: 1,
    pushId: SAMPLE_PUSH_ID,
    jobId: job.id,
    deviceId: 'sample',
    app: job.app,
    platform,
    token: SAMPLE_TOKEN[platform],
    userId: 'sample',
    content: job.content,
    priority: job.priority,
    acceptedAt: timing.acceptedAt,
  };
  if (job.collapseKey !== undefined) push.collapseKey = job.collapseKey;
  if (timing.expiresAt !== undefined) push.expiresAt = timing.expiresAt;
  if (timing.nowOrNever) push.nowOrNever = true;
  return push;
}

/** The provider's problem with one push, or undefined: the pushers' last line of defence. */
export function pushProblem(push: DevicePush, bundleId: string, now: Date = new Date()): string | undefined {
  if (push.platform === 'web') return webRequestProblem(buildWebRequest(push, now));
  return push.platform === 'apns' ? apnsRequestProblem(apnsRequestParts(push, bundleId, now)) : fcmMessageProblem(buildFcmMessage(push, now));
}

/** The job field a provider's problem comes from: an override's header or field, the collapse key, or the content. */
function pathOf(job: JobPart, message: string, platform: Platform): string {
  if (platform === 'web') return /topic/.test(message) ? 'content.web.topic' : job.content.web?.payload !== undefined ? 'content.web.payload' : 'content';
  const header = /apns-(priority|expiration|collapse-id|push-type)/.exec(message)?.[0];
  if (header !== undefined) {
    // Each path's own headers: content.fcm.apns's (names in any case) through FCM, content.apns's to APNs.
    const fcmHeaders = platform === 'fcm' ? job.content.fcm?.apns?.headers : undefined;
    const spelt = fcmHeaders === undefined ? undefined : Object.keys(fcmHeaders).find((name) => name.toLowerCase() === header);
    if (spelt !== undefined) return `content.fcm.apns.headers.${spelt}`;
    if (platform === 'apns' && job.content.apns?.headers?.[header as 'apns-priority'] !== undefined) return `content.apns.headers.${header}`;
  }
  const android = overriddenAndroidField(job, message);
  if (android !== undefined) return android;
  if (/collapse/i.test(message)) return 'collapseKey';
  const fcmField = /^((?:webpush|android\.fcm_?[oO]ptions)\S*) /.exec(message)?.[1];
  if (fcmField !== undefined && job.content.fcm !== undefined) return `content.fcm.${fcmField}`;
  if (/^android\./.test(message) && job.content.fcm?.android !== undefined) return 'content.fcm.android';
  if (/^apns[.:]/.test(message) && job.content.fcm?.apns !== undefined) return 'content.fcm.apns';
  return 'content';
}

/**
 * `content.fcm.android.<field>` as the override spells it (proto or JSON name), when the problem is
 * about a field the override set; undefined otherwise (a collapse key the job set, say).
 */
function overriddenAndroidField(job: JobPart, message: string): string | undefined {
  const field = /^android\.(\S+) (?:is|must be|sets)/.exec(message)?.[1];
  const overridden = job.content.fcm?.android;
  if (field === undefined || overridden === undefined) return undefined;
  const [top = '', ...rest] = field.split('.');
  const jsonName = top.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
  const spelt = [top, jsonName].find((name) => Object.hasOwn(overridden, name));
  return spelt === undefined ? undefined : ['content.fcm.android', spelt, ...rest].join('.');
}

const cannotBeChecked = (err: unknown): string => `cannot be checked: ${(err as Error).message}`;

/** A rule that throws (a bug, or input no serializer can take) is a refusal, never a crash of the door. */
function safeProblem(job: JobPart, platform: Platform, timing: SampleTiming, now: Date): string | undefined {
  try {
    return pushProblem(samplePush(job, platform, timing), 'com.example.app', now);
  } catch (err) {
    return cannotBeChecked(err);
  }
}

/** Which providers a door checks a job against beyond APNs and FCM. */
export interface ConformanceScope {
  /**
   * Check Web Push's rules too (a 3,993-byte JSON limit, below APNs' and FCM's 4,096): true when
   * the job's app has VAPID keys of its own (AppRow.webVapid). An app without them may still have
   * browsers, signed with the web-pusher's own pair: the HTTP API then asks whether the app has
   * web devices and the demuxer whether the job's targets include one (webConformanceIssues). A
   * door that does not know the app passes false; the web-pusher checks every push again.
   */
  web: boolean;
}

const issueOf = (job: JobPart, platform: Platform, problem: string): ConformanceIssue => ({ path: pathOf(job, problem, platform), message: `${PROVIDER_NAME[platform]}: ${problem}` });

function issuesOn(job: JobPart, platforms: readonly Platform[], now: Date): ConformanceIssue[] {
  if (platforms.length === 0) return [];
  let timing: SampleTiming;
  try {
    timing = sampleTiming(job, now);
  } catch (err) {
    // A `now` that is no date: every platform's problem.
    return platforms.map((platform) => issueOf(job, platform, cannotBeChecked(err)));
  }
  return platforms.flatMap((platform) => {
    const problem = safeProblem(job, platform, timing, now);
    return problem === undefined ? [] : [issueOf(job, platform, problem)];
  });
}

/**
 * Every rule a job's pushes would break at Apple, Google or (when `scope.web`) a Web Push service,
 * checked when the job is accepted (HTTP API, client library, CLI, demuxer), with the field it
 * comes from. The bundle id is a stand-in: Apple's rules do not depend on it.
 */
export function jobConformanceIssues(job: JobPart, scope: ConformanceScope, now: Date = new Date()): ConformanceIssue[] {
  return issuesOn(job, platformsFor(job.content).filter((p) => p !== 'web' || scope.web), now);
}

/**
 * Rules a new job meets where it enters (the HTTP API, the client library and so the CLI), beyond
 * jobConformanceIssues, which the demuxer and the pushers also hold every job and push to: kept
 * from work accepted before them (queued, parked, stored, fanning out), which would be parked for
 * good. Now: FCM's own keys counted in the payload it forwards to iOS (fcmForwardedToIosProblem).
 */
export function entryConformanceIssues(job: JobPart, now: Date = new Date()): ConformanceIssue[] {
  if (!platformsFor(job.content).includes('fcm')) return [];
  let problem: string | undefined;
  try {
    problem = fcmForwardedToIosProblem(buildFcmMessage(samplePush(job, 'fcm', sampleTiming(job, now)), now));
  } catch (err) {
    problem = cannotBeChecked(err);
  }
  return problem === undefined ? [] : [{ path: 'content', message: `FCM: ${problem}` }];
}

/**
 * The rules that depend on the app's own APNs credentials: Apple takes Live Activity pushes over
 * token-based authentication only (apns-provider.ts), so a Live Activity job of an app that sends
 * with a certificate is refused at the API and parked whole by the demuxer, not parked push by push
 * at the pusher (scheduled ones when they fall due).
 */
export function appConformanceIssues(job: JobPart, app: { id: string; apnsAuth?: string | null | undefined }): ConformanceIssue[] {
  if (app.apnsAuth !== 'certificate' || effectivePushType(job.content) !== 'liveactivity') return [];
  return [{ path: 'content.liveActivity', message: `app "${app.id}" sends to APNs with a certificate, and Apple takes Live Activity pushes over token-based authentication only: give it a .p8 signing key` }];
}

/** The Web Push rules alone (none when the job does not go to browsers): for a door that learns only later that it has some. */
export function webConformanceIssues(job: JobPart, now: Date = new Date()): ConformanceIssue[] {
  return issuesOn(job, platformsFor(job.content).filter((p) => p === 'web'), now);
}

/**
 * Sentences for the job's 202 answer and status when Herald had to adapt it to a provider's limits,
 * or when part of it will not be delivered as asked (expiresBeforeDue refuses a job none of whose
 * pushes could be).
 */
export function jobNotices(job: Pick<PushJob, 'expiresAt' | 'ttl' | 'content' | 'deliverAt'>, acceptedAt: Date): string[] {
  return [fcmStorageNotice(job, acceptedAt), localTimeExpiryNotice(job, acceptedAt), cleartextImageNotice(job)].filter((n): n is string => n !== undefined);
}

/**
 * An image by plain http: iOS's App Transport Security and Android (9 and later) load only https
 * unless the app allows cleartext, and a browser page served over https blocks it as mixed content.
 * Said, not refused: an app may allow it.
 */
function cleartextImageNotice(job: Pick<PushJob, 'content'>): string | undefined {
  const url = job.content.imageUrl;
  if (url === undefined || !/^http:/i.test(url)) return undefined;
  return 'content.imageUrl is http: iPhones (App Transport Security) and Android 9 and later download it only if the app allows cleartext, and browsers may block it; give an https URL';
}

/**
 * FCM's ttl counts from the send, so a scheduled job's expiry counts from when it is due: its
 * earliest possible instant (an `at`; a local time on a date, in the earliest zone, UTC+14; a local
 * time without a date, its acceptance).
 */
function fcmStorageNotice(job: Pick<PushJob, 'expiresAt' | 'content' | 'deliverAt'>, acceptedAt: Date): string | undefined {
  // deliverAt.expiresAfter (at most 28 days) expires each push within 28 days of its due time.
  if (job.expiresAt === undefined || job.deliverAt?.expiresAfter !== undefined || !platformsFor(job.content).includes('fcm')) return undefined;
  const from = earliestSend(job.deliverAt, acceptedAt);
  const aheadS = (Date.parse(job.expiresAt) - from) / 1000;
  if (aheadS <= HERALD_MAX_STORAGE_S) return undefined;
  const after = job.deliverAt === undefined ? 'ahead' : 'after the job is due';
  return `expiresAt is ${Math.round(aheadS / 86_400)} days ${after}: FCM stores a push at most 28 days, so FCM devices get android.ttl ${HERALD_MAX_STORAGE_S}s`;
}

const DAY_MS = 86_400_000;

/**
 * A local time falls in each device's zone at its own instant: without a date, within the next day;
 * on a date, up to 26 hours after the easternmost zone's (the westernmost, UTC−12). An expiry
 * before the latest of them (a ttl counts from acceptance) drops the pushes of every device whose
 * local time comes after it, as expired, behind a 202. Said, not refused: some zones do get it
 * (expiresBeforeDue refuses a job none would). Not said of a job expired when accepted (a repost
 * answered as its duplicate after its expiry; one without acceptedAt the demuxer takes after it):
 * no zone gets it. The advice is 26 hours: the day the clocks go back is 25 hours long (26 in
 * Antarctica/Troll, whose clocks move 2 hours), and a ttl of one day then misses the zones where it does (not said for every job of one day's ttl, which
 * the rest of the year reaches every zone).
 */
function localTimeExpiryNotice(job: Pick<PushJob, 'expiresAt' | 'ttl' | 'content' | 'deliverAt'>, acceptedAt: Date): string | undefined {
  const d = job.deliverAt;
  if (d === undefined || 'at' in d) return undefined;
  const expiry = jobExpiry(job, acceptedAt);
  const latest = d.date === undefined ? acceptedAt.getTime() + DAY_MS : localTimeBounds({ localTime: d.localTime, date: d.date }).latest;
  // A push due at its expiry is dropped (schedule-split.ts): on a date, the expiry must come after the last zone's time.
  if (expiry === undefined || expiry <= acceptedAt || (d.date === undefined ? expiry.getTime() >= latest : expiry.getTime() > latest)) return undefined;
  const at = expiry.getTime();
  const by =
    job.expiresAt !== undefined && Date.parse(job.expiresAt) === at
      ? 'expiresAt'
      : job.ttl !== undefined && job.ttl > 0 && acceptedAt.getTime() + job.ttl * 1000 === at
        ? 'ttl, which counts from acceptance'
        : 'now-or-never: sent within 60 s of acceptance or not at all';
  const advice =
    d.date === undefined
      ? 'less than a day after it was accepted (a local time without a date falls within the next day)'
      : `before ${d.localTime} on ${d.date} in the westernmost zones (UTC−12, ${new Date(latest).toISOString()})`;
  const fix = d.date === undefined ? 'a ttl of at least 26 hours or an expiresAt 26 hours ahead (the day the clocks go back lasts 25, and 26 in Antarctica/Troll)' : `an expiresAt after ${new Date(latest).toISOString()}`;
  const bound = d.expiresAfter === undefined ? ', and deliverAt.expiresAfter (e.g. "PT2H") to keep each device\'s push from going later than that after its own local time' : '';
  return `the job expires at ${expiry.toISOString()} (${by}), ${advice}: devices whose local ${d.localTime} comes after that get nothing (recorded as expired); for every device, give ${fix}${bound}`;
}

function earliestSend(deliverAt: PushJob['deliverAt'], acceptedAt: Date): number {
  if (deliverAt === undefined) return acceptedAt.getTime();
  const due = 'at' in deliverAt ? Date.parse(deliverAt.at) : deliverAt.date === undefined ? Number.NaN : localTimeBounds({ localTime: deliverAt.localTime, date: deliverAt.date }).earliest;
  return Number.isNaN(due) ? acceptedAt.getTime() : Math.max(acceptedAt.getTime(), due);
}
