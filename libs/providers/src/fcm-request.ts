import type { Credential } from 'firebase-admin/app';
import type { IncomingHttpHeaders } from 'node:http2';
import { retryAfterMs } from './retry-after.ts';
import type { FcmFailure } from './fcm-classify.ts';
import type { FcmMessage } from './fcm-message.ts';
import { FcmTimeoutError, type FcmSessions } from './fcm-sessions.ts';

/** What FCM answered one send: its message name, or a failure in the classifier's terms. */
export type FcmAnswer = { ok: true; name: string } | { ok: false; failure: FcmFailure };

/** One v1 send (POST projects/{id}/messages:send), answered or cut at `timeoutMs` (FcmTimeoutError). */
export type FcmSend = (message: FcmMessage, timeoutMs: number) => Promise<FcmAnswer>;

/** Tokens are fetched again this long before they expire, as firebase-admin's own apps do. */
const REFRESH_BEFORE_EXPIRY_MS = 5 * 60_000;

/**
 * Google's token server refused the service account (an OAuth error answer, RFC 6749 §5.2:
 * `invalid_grant` for a revoked or deleted key, or a host clock minutes off): no retry fixes it.
 */
export class FcmCredentialRefused extends Error {
  override readonly name = 'FcmCredentialRefused';
}

/** The status of an OAuth error answer from the token server (gaxios' error keeps the response), if the error is one. */
function tokenServerRefusal(err: unknown): number | undefined {
  const status = (err as { response?: { status?: unknown } } | undefined)?.response?.status;
  return status === 400 || status === 401 || status === 403 ? status : undefined;
}

/**
 * The credential's OAuth access token, cached until five minutes before it expires; one fetch at
 * a time however many sends wait for it, each waiting at most its own deadline. `renew` makes a new
 * credential where the old one must not be asked again: after FCM refused its token (the old one's
 * token library would hand back its own cached copy) and after a fetch that hung past a deadline
 * (whose library would make later calls wait on the hung request).
 */
export class AccessTokens {
  private current: { token: string; refreshAt: number } | undefined;
  private fetching: Promise<string> | undefined;
  /** Only the latest fetch writes what it got: one given up (a deadline, a refusal) still answers the sends waiting on it. */
  private generation = 0;
  /** The next fetch follows FCM's refusal of a token; `vouched` is what it fetched, until FCM takes it. */
  private afterRefusal = false;
  private vouched: string | undefined;

  constructor(
    private credential: Credential,
    private readonly renew: () => Credential = () => credential,
  ) {}

  get(now = Date.now(), timeoutMs?: number): string | Promise<string> {
    if (this.current !== undefined && now < this.current.refreshAt) return this.current.token;
    const fetching = (this.fetching ??= this.fetch());
    return timeoutMs === undefined ? fetching : this.within(fetching, timeoutMs);
  }

  /**
   * FCM answered 401 UNAUTHENTICATED ("missing, invalid, or expired OAuth token") to a send that
   * carried `token`. A token fetched before any refusal is dropped, so the next send fetches a new
   * one (through a new credential, any fetch under way given up), and the push is retried
   * ('retry'); the token fetched after a refusal, refused too before FCM took it once, is 'final':
   * the credentials themselves are refused (the push parked, the app's ban counting it).
   */
  refused(token: string): 'retry' | 'final' {
    if (token === this.vouched) return 'final';
    if (this.current?.token === token) {
      this.current = undefined;
      this.afterRefusal = true;
      this.giveUpFetch();
    }
    return 'retry';
  }

  /** FCM took a send carrying `token`: a token fetched after a refusal is no longer on probation. */
  accepted(token: string): void {
    if (token === this.vouched) this.vouched = undefined;
  }

  /** The fetch under way (if any) writes nothing more, and the next one asks a new credential. */
  private giveUpFetch(): void {
    this.generation++;
    this.fetching = undefined;
    this.credential = this.renew();
  }

  private fetch(): Promise<string> {
    const generation = ++this.generation;
    const afterRefusal = this.afterRefusal;
    const fetching: Promise<string> = this.credential
      .getAccessToken()
      .then(({ access_token, expires_in }) => {
        if (generation === this.generation) {
          this.current = { token: access_token, refreshAt: Date.now() + expires_in * 1000 - REFRESH_BEFORE_EXPIRY_MS };
          if (afterRefusal) {
            this.vouched = access_token;
            this.afterRefusal = false;
          }
        }
        return access_token;
      })
      .catch((err: unknown) => {
        const status = tokenServerRefusal(err);
        throw status === undefined ? err : new FcmCredentialRefused(`Google's token server refused the service account (HTTP ${status}): ${(err as Error).message}`);
      })
      .finally(() => {
        if (this.fetching === fetching) this.fetching = undefined;
      });
    return fetching;
  }

  private async within(fetching: Promise<string>, timeoutMs: number): Promise<string> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        if (this.fetching === fetching) this.giveUpFetch();
        reject(new FcmTimeoutError(`no OAuth access token from the token server within ${timeoutMs} ms`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([fetching, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

interface GoogleErrorBody {
  error?: { status?: string; message?: string; details?: Array<{ '@type'?: string; errorCode?: string; violations?: unknown; fieldViolations?: unknown; reason?: unknown }> };
}

const isJson = (headers: IncomingHttpHeaders): boolean => /^application\/json/i.test(headers['content-type'] ?? '');

function parsed(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return undefined;
  }
}

/** QUOTA_EXCEEDED's google.rpc.QuotaFailure detail ("which quota was exceeded"): its violations' subjects and descriptions, as one line. */
function quotaViolationsOf(details: NonNullable<GoogleErrorBody['error']>['details']): string | undefined {
  const violations = (details ?? []).filter((d) => d['@type']?.endsWith('google.rpc.QuotaFailure') === true).flatMap((d) => (Array.isArray(d.violations) ? (d.violations as unknown[]) : []));
  const words = violations.flatMap((v) => (typeof v === 'object' && v !== null ? [(v as { subject?: unknown }).subject, (v as { description?: unknown }).description] : [])).filter((w): w is string => typeof w === 'string' && w !== '');
  return words.length === 0 ? undefined : words.join('; ');
}

/** The fields INVALID_ARGUMENT's google.rpc.BadRequest detail names, if it names any (one naming none tells nothing: the words decide). */
function badRequestFieldsOf(details: NonNullable<GoogleErrorBody['error']>['details']): string[] | undefined {
  const violations = (details ?? []).filter((d) => d['@type']?.endsWith('google.rpc.BadRequest') === true).flatMap((d) => (Array.isArray(d.fieldViolations) ? (d.fieldViolations as unknown[]) : []));
  const fields = violations.map((v) => (typeof v === 'object' && v !== null ? (v as { field?: unknown }).field : undefined)).filter((f): f is string => typeof f === 'string' && f !== '');
  return fields.length === 0 ? undefined : fields;
}

/** APNs' answer to the request FCM forwarded (the google.firebase.fcm.v1.ApnsError detail's reason), if the answer carries one. */
function apnsReasonOf(details: NonNullable<GoogleErrorBody['error']>['details']): string | undefined {
  const reason = (details ?? []).find((d) => d['@type']?.endsWith('google.firebase.fcm.v1.ApnsError') === true)?.reason;
  return typeof reason === 'string' && reason !== '' ? reason : undefined;
}

/** The failure in an error answer: FCM's own code (details[].errorCode) first, else the status, as firebase-admin reads it. */
export function failureOf(status: number, headers: IncomingHttpHeaders, body: string): FcmFailure {
  const retryAfter = headers['retry-after'];
  const wait = retryAfterMs(retryAfter);
  const error = isJson(headers) ? (parsed(body) as GoogleErrorBody | undefined)?.error : undefined;
  const fcmCode = error?.details?.find((d) => d['@type']?.endsWith('google.firebase.fcm.v1.FcmError') === true)?.errorCode;
  const code = fcmCode ?? error?.status;
  const quota = quotaViolationsOf(error?.details);
  const badRequestFields = badRequestFieldsOf(error?.details);
  const apnsReason = apnsReasonOf(error?.details);
  // A 503 reads as firebase-admin reports it: "UNAVAILABLE: HTTP 503".
  const message = status === 503 ? 'HTTP 503' : error?.message;
  return {
    ...(code !== undefined && { code }),
    ...(message !== undefined && { message }),
    ...(quota !== undefined && { quotaViolations: quota }),
    ...(badRequestFields !== undefined && { badRequestFields }),
    ...(apnsReason !== undefined && { apnsReason }),
    httpStatus: status,
    ...(wait !== undefined && { retryAfterMs: wait }),
  };
}

/**
 * Sends v1 messages as Google documents them (buildFcmMessage, checked by fcm-rules.ts) over
 * `sessions`, with the headers firebase-admin sends (its client and metrics headers, the
 * credential's bearer token; `sdkVersion` is firebase-admin's SDK_VERSION). One attempt per send:
 * Herald retries through its queues, with back-off and the shared limiter.
 */
export function fcmSender(sessions: FcmSessions, tokens: AccessTokens, projectId: string, sdkVersion: string): FcmSend {
  const path = `/v1/projects/${encodeURIComponent(projectId)}/messages:send`;
  const fixed = {
    'content-type': 'application/json; charset=utf-8',
    'x-firebase-client': `fire-admin-node/${sdkVersion}`,
    'x-goog-api-client': `gl-node/${process.versions.node} fire-admin/${sdkVersion}`,
    access_token_auth: 'true',
  };
  return async (message, timeoutMs) => {
    const token = await tokens.get(Date.now(), timeoutMs);
    const res = await sessions.post(path, { ...fixed, authorization: `Bearer ${token}` }, JSON.stringify({ message }), timeoutMs);
    if (res.status !== 200) {
      const failure = failureOf(res.status, res.headers, res.body);
      // Not THIRD_PARTY_AUTH_ERROR (also 401): the iOS or web credentials kept in Firebase, not this token.
      const tokenRefused = res.status === 401 && failure.code !== 'THIRD_PARTY_AUTH_ERROR';
      return { ok: false, failure: tokenRefused && tokens.refused(token) === 'retry' ? { ...failure, staleToken: true } : failure };
    }
    tokens.accepted(token);
    const name = isJson(res.headers) ? (parsed(res.body) as { name?: unknown } | undefined)?.name : undefined;
    return typeof name === 'string' ? { ok: true, name } : { ok: false, failure: { code: 'INTERNAL', message: 'FCM answered without a message name', httpStatus: res.status } };
  };
}
