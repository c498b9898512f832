import type { Logger } from '@herald/logging';
import type { SendResult } from '@herald/providers';
import { Counter, Gauge, type Registry } from '@herald/runtime';

/**
 * Provider answers that say the app's credentials or topic are wrong, not the push: APNs
 * 403 token/certificate errors and topic errors, FCM auth and sender errors, and credentials
 * the pusher could not even load. Any number of retries would fail the same way.
 *
 * Told by the reason's leading code (what comes before its first ':'), never by words anywhere in
 * it: a reason carries the provider's own text, and a push service's 403 page titled "Forbidden",
 * or an FCM INVALID_ARGUMENT whose message mentions PERMISSION_DENIED, is one push's answer; read
 * as the app's, enough of them banned every push of the app.
 */
const CREDENTIAL_OR_TOPIC = new Set([
  'InvalidProviderToken', 'MissingProviderToken', 'BadCertificate', 'BadCertificateEnvironment', 'Forbidden',
  'TopicDisallowed', 'BadTopic', 'MissingTopic', 'no APNs topic for this app',
  // Not FCM's THIRD_PARTY_AUTH_ERROR: "APNs certificate or web push auth key was invalid or
  // missing" (FCM ErrorCode), the iOS or web credentials kept in Firebase, not the service account
  // Herald holds; the app's Android pushes go on, so it parks that push and bans nothing.
  'authentication-error', 'invalid-credential', 'UNAUTHENTICATED', 'PERMISSION_DENIED', 'permission-denied',
  'credentials',
  // Web Push: the push service refused the app's VAPID JWT, or the app has no keys at all.
  'VapidUnauthorized', 'no-vapid-keys',
]);

/**
 * Credential failures that are one push service's, not the app's everywhere: a Web Push service
 * refused the app's VAPID JWT. Another may take the same key and subject (Apple's refuses a subject
 * that Chrome's and Mozilla's take), so they ban the app at that push service only, and its pushes
 * to the others go on. Having no VAPID keys at all, or credentials that cannot be loaded, fail at
 * every push service alike: the app's.
 */
const PER_PUSH_SERVICE = new Set(['VapidUnauthorized']);

/** A reason's leading code: the text before its first ':' (all of it when it has none). */
const leadingCode = (reason: string): string => {
  const colon = reason.indexOf(':');
  return (colon < 0 ? reason : reason.slice(0, colon)).trim();
};

export const isCredentialFailure = (result: SendResult): result is Extract<SendResult, { kind: 'permanent' }> =>
  result.kind === 'permanent' && CREDENTIAL_OR_TOPIC.has(leadingCode(result.reason));

export interface AppBanSettings {
  /** Credential/topic failures within windowMs that ban the app. */
  threshold: number;
  windowMs: number;
  /** How long a banned app's pushes are parked before sends are tried again. */
  cooldownMs: number;
}

export interface AppBans {
  /**
   * The ban in force for this app, if any: of the app, or of the app at `service`, the push service
   * a Web Push goes to (pushServiceOf), when given. With the app's present `settings`
   * (settingsKeyOf), a ban made under other settings ends here: the app was changed since
   * (updated_at moves on any change: credentials, topic, endpoint, enabling it), which may be the
   * fix the ban asks for, so pushes replayed after a rotation are sent rather than parked again. A
   * change that fixed nothing costs one more threshold of failures. Settings other than those the
   * app was last looked up with end its bans at every push service, not only at `service`: the
   * change may have renamed the one a ban holds at (its allow-list edited), which no push names again.
   */
  banned(app: string, settings?: string, service?: string): { until: Date; reason: string; service?: string } | undefined;
  /**
   * Count a send result under the app's `settings`; a credential or topic failure may start a ban
   * (failures under earlier settings, or other than those `banned` was last asked with, do not
   * count). `service`: the push service a Web Push went to,
   * where a refused VAPID JWT is counted and banned (PER_PUSH_SERVICE); other failures are the app's.
   */
  observe(app: string, result: SendResult, settings?: string, service?: string): void;
  /** A push was delivered under these app settings (settingsKeyOf): its credentials, topic and endpoint work. */
  delivered(settings: string): void;
  /** Whether a push was delivered under these app settings within DELIVERED_LATELY_MS in this process. */
  deliversLately(settings: string): boolean;
  /** A token kept (keptToken) for this app: `threshold` of them within the window raise the app-tokens-kept alarm. */
  kept(app: string, result: Extract<SendResult, { kind: 'permanent' }>): void;
}

/**
 * An app's settings as the pushers send with them: a delivery vouches for these only, so a change
 * of credentials, topic or endpoint (updated_at moves, and credentials_version) starts again from
 * nothing, and a wrong change cannot have every token condemned on the strength of the old one.
 */
export const settingsKeyOf = (app: { id: string; updatedAt: Date; credentialsVersion?: number }): string =>
  `${app.id}\u0000${app.updatedAt.getTime()}\u0000${app.credentialsVersion ?? 0}`;

/** How long one delivery vouches for an app's credentials, topic and endpoint. */
export const DELIVERED_LATELY_MS = 60 * 60_000;

/**
 * A token-or-app answer (SendResult `unlessAppFails`: APNs BadDeviceToken / DeviceTokenNotForTopic,
 * FCM SENDER_ID_MISMATCH) for an app none of whose pushes was delivered lately under its present
 * settings: the app's credentials, topic or APNs environment (production / development) is the
 * suspect, not the token. Invalidating would wipe every token of a misconfigured app in one
 * broadcast, so the token is kept and the push refused for good (parked, counted as failed). It
 * does not count towards a ban (a pusher that has just started, or an app quiet for an hour, meets
 * stale tokens before any delivery), but enough of them raise the app-tokens-kept alarm.
 */
export function keptToken(result: Extract<SendResult, { kind: 'dead-token' }>): Extract<SendResult, { kind: 'permanent' }> {
  return {
    kind: 'permanent',
    reason: `${result.reason} (token kept: none of this app's pushes was delivered in the last hour with its present settings, so its credentials, topic or APNs environment may be what is wrong)`,
  };
}

interface Ban {
  app: string;
  /** The push service it holds at (PER_PUSH_SERVICE); undefined: every push of the app. */
  service?: string | undefined;
  until: number;
  reason: string;
  /** The app settings (settingsKeyOf) its failures were under, when known. */
  settings?: string | undefined;
}

/** Where a ban holds: the app, or the app at one push service. */
const scopeOf = (app: string, service: string | undefined): string => (service === undefined ? app : `${app}\u0000${service}`);

/**
 * A ban's gauge labels and log fields: the app, and `push_service` when it holds at one. Not
 * `service`: every series and log line of a Herald process carries `service`, its own name
 * (createMetricsRegistry's default label, the logger's base), so an app's ban read
 * `service="apns-pusher"`, and a log line's second `service` key hid the process's.
 */
const gaugeLabelsOf = (ban: Pick<Ban, 'app' | 'service'>): { app: string; push_service?: string } => ({ app: ban.app, ...(ban.service !== undefined && { push_service: ban.service }) });

/**
 * Temporary bans kept in this pusher process (see docs/adr/0003-apps-as-data.md): each process
 * sees its own failures, counted once a batch has been sent (what it took in by then, up to its
 * send window, is sent all the same), so with N pushers a broken app costs up to N × (threshold +
 * send window) failed requests a window, and the hot path never waits on a shared store.
 */
export function createAppBans(settings: AppBanSettings, logger: Logger, registry: Registry, now: () => number = Date.now): AppBans {
  const failures = new Map<string, number[]>();
  /** By scopeOf: an app's bans, and its bans at one push service. */
  const bans = new Map<string, Ban>();
  /** Per scope, the settings a ban was lifted for because they changed: their late failures count no more. */
  const liftedSettings = new Map<string, string>();
  /** Per app, the settings (settingsKeyOf) it was last looked up with. */
  const seenSettings = new Map<string, string>();
  const lastDelivered = new Map<string, number>();
  /** Count one more event of the app at `at` within the window: how many, once they reach the threshold (and start again), else undefined. */
  const reachedThreshold = (times: Map<string, number[]>, app: string, at: number): number | undefined => {
    const recent = (times.get(app) ?? []).filter((t) => t > at - settings.windowMs);
    recent.push(at);
    if (recent.length < settings.threshold) {
      times.set(app, recent);
      return undefined;
    }
    times.delete(app);
    return recent.length;
  };
  const keptAt = new Map<string, number[]>();
  const keptTotal = new Counter({
    name: 'herald_app_tokens_kept_total',
    help: "Pushes refused with a token-or-app answer (BadDeviceToken, DeviceTokenNotForTopic, SENDER_ID_MISMATCH) for an app none of whose pushes was delivered lately: the token was kept, the push parked",
    labelNames: ['app'],
    registers: [registry],
  });
  /**
   * A ban whose cool-off is over ends when it is next looked at (a push of the app, or a scrape of
   * the gauge), and so does one made under other settings than the app's present ones.
   */
  const liftIfOver = (scope: string, ban: Ban, settings?: string): boolean => {
    const changed = settings !== undefined && ban.settings !== undefined && settings !== ban.settings;
    if (ban.until > now() && !changed) return false;
    bans.delete(scope);
    // Sends still under way with the settings a change lifted the ban for ban nothing more.
    if (changed) liftedSettings.set(scope, ban.settings as string);
    gauge.set(gaugeLabelsOf(ban), 0);
    const why = changed ? "the app was changed since (its credentials, topic, endpoint or another setting)" : 'its cool-off is over';
    const where = ban.service === undefined ? '' : ` at push service ${ban.service}`;
    logger.warn({ ...gaugeLabelsOf(ban), alarm: 'app-ban-lifted' }, `app ban${where} lifted (${why}): sends are tried again`);
    return true;
  };
  /**
   * The app's settings changed since it was last looked up: its bans at every push service made
   * under others end, not only one a push now goes to. The change may have renamed the push service
   * a ban holds at (an allow-list entry added, a wildcard narrowed), whose scope no push would look
   * up again: that ban outlived its fix on the gauge and the alert until its cool-off ended.
   */
  const liftChangedScopes = (app: string, settings: string | undefined): void => {
    if (settings === undefined || seenSettings.get(app) === settings) return;
    seenSettings.set(app, settings);
    for (const [scope, ban] of [...bans]) if (ban.app === app && ban.service !== undefined) liftIfOver(scope, ban, settings);
  };
  /** The ban in force in this scope, once one over (or made under other settings) is lifted. */
  const inForce = (scope: string, settings?: string): Ban | undefined => {
    const ban = bans.get(scope);
    return ban === undefined || liftIfOver(scope, ban, settings) ? undefined : ban;
  };
  const gauge: Gauge<'app' | 'push_service'> = new Gauge({
    name: 'herald_app_banned',
    help: "Whether an app is banned (1) for credential or topic errors: its pushes are parked until the cool-off ends; with `push_service`, its Web Push pushes to that push service only (it refused the app's VAPID JWT)",
    labelNames: ['app', 'push_service'],
    registers: [registry],
    // A banned app that sends nothing more to this pusher would show banned for good otherwise.
    collect: () => {
      for (const [scope, ban] of [...bans]) liftIfOver(scope, ban);
    },
  });
  return {
    banned(app, settings, service) {
      liftChangedScopes(app, settings);
      const ban = inForce(app, settings) ?? (service === undefined ? undefined : inForce(scopeOf(app, service), settings));
      if (ban === undefined) return undefined;
      return { until: new Date(ban.until), reason: ban.reason, ...(ban.service !== undefined && { service: ban.service }) };
    },
    delivered(key) {
      lastDelivered.set(key, now());
    },
    deliversLately(key) {
      const at = lastDelivered.get(key);
      return at !== undefined && at > now() - DELIVERED_LATELY_MS;
    },
    kept(app, result) {
      keptTotal.inc({ app });
      const answers = reachedThreshold(keptAt, app, now());
      if (answers === undefined) return;
      logger.error(
        { app, alarm: 'app-tokens-kept', answers, windowMs: settings.windowMs, reason: result.reason },
        "app's pushes refused as if its tokens were of another APNs environment, topic or Firebase project, and none delivered lately: tokens kept, pushes parked; check the app's endpoint, topic and credentials",
      );
    },
    observe(app, result, appSettings, pushService) {
      if (!isCredentialFailure(result) || bans.has(app)) return;
      // Sent under settings the app has been looked up with others since (a change, maybe the fix):
      // they count no more, and ban no push service whose name the change may have retired.
      if (appSettings !== undefined && (seenSettings.get(app) ?? appSettings) !== appSettings) return;
      const service = pushService !== undefined && PER_PUSH_SERVICE.has(leadingCode(result.reason)) ? pushService : undefined;
      const scope = scopeOf(app, service);
      if (bans.has(scope)) return;
      if (appSettings !== undefined && liftedSettings.get(scope) === appSettings) return;
      const at = now();
      const count = reachedThreshold(failures, scopeOf(appSettings ?? app, service), at);
      if (count === undefined) return;
      const ban: Ban = { app, service, until: at + settings.cooldownMs, reason: result.reason, settings: appSettings };
      bans.set(scope, ban);
      gauge.set(gaugeLabelsOf(ban), 1);
      const said =
        service === undefined
          ? 'app banned: its sends keep failing with credential or topic errors; its pushes are parked until the cool-off ends'
          : `app banned at push service ${service}: it keeps refusing the app's VAPID JWT; the app's pushes to it are parked until the cool-off ends, those to other push services go on`;
      logger.error({ ...gaugeLabelsOf(ban), alarm: 'app-banned', failures: count, windowMs: settings.windowMs, cooldownMs: settings.cooldownMs, reason: result.reason }, said);
    },
  };
}
