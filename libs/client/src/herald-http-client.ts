import {
  ApiErrorBody,
  DeviceList,
  DeviceRegister,
  DeviceUnregister,
  MuteCreate,
  MuteDelete,
  MuteList,
  MuteView,
  OptOutChange,
  OptOutList,
  OptOutView,
  PreferenceRemoved,
  UserErasureRequest,
  UserErasureView,
  UserOfApp,
  VapidPublicKeyView,
} from '@herald/contracts';
import { z } from 'zod';
import { DEFAULT_OVERLOAD_WAIT_MS, overloadWaitMs, retryAfterMs } from './retry-after.ts';
import { validate } from './validation.ts';

/**
 * The HTTP API refused the request (4xx) or failed (5xx): its status, error code and the fields it
 * named; `retryAfterS` when it sent a Retry-After, and `attempts`, how many times the request was
 * sent (more than 1 when the client sent it again after a 503 `overloaded`: see overloadRetries).
 */
export class HeraldApiError extends Error {
  /** Seconds the API asked to wait before sending the request again (its Retry-After header); undefined when it sent none. */
  readonly retryAfterS: number | undefined;
  /** How many times the request was sent; this error is the answer to the last. */
  readonly attempts: number;
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly issues: ReadonlyArray<{ path: string; message: string }> = [],
    answer: { retryAfterS?: number | undefined; attempts?: number } = {},
  ) {
    super(`${status} ${code}: ${message}`);
    this.name = 'HeraldApiError';
    this.retryAfterS = answer.retryAfterS;
    this.attempts = answer.attempts ?? 1;
  }
}

export interface HeraldHttpClientOptions {
  /** The HTTP API's base URL, e.g. http://127.0.0.1:8080. */
  url: string;
  /** A team API key (herald keys create). */
  apiKey: string;
  /**
   * Each request's wait for its answer; default DEFAULT_HTTP_TIMEOUT_MS (15 s). Past it the call
   * rejects with a TimeoutError (the request may have been taken). A request sent again after a 503
   * `overloaded` (overloadRetries) gets the whole of it again: an overloaded API answers in
   * milliseconds, unread, so a call lasts its Retry-After waits (about a second each) and one
   * answered request. Keep it above the API's API_PUBLISH_CONFIRM_TIMEOUT_MS (10 s by default): a
   * client giving up first, while RabbitMQ stalls, got a TimeoutError where the API was about to
   * answer 503 saying which jobs may still arrive.
   */
  timeoutMs?: number;
  /**
   * How many times a request answered 503 `overloaded` (the API was working on
   * API_MAX_BODY_BYTES_IN_FLIGHT of request bodies and refused this one unread, so nothing of it
   * was done) is sent again, each after the answer's Retry-After plus a little jitter; default
   * DEFAULT_OVERLOAD_RETRIES (3). 0: never. A Retry-After longer than `timeoutMs` is not waited:
   * that 503 is thrown, as the last one is once the retries are spent, a HeraldApiError carrying
   * `retryAfterS` and `attempts`. No other answer is sent again: a 503 `broker-unavailable` may
   * still arrive. Anything but a whole number, 0 or more, throws RangeError here.
   */
  overloadRetries?: number;
}

/** The client's default wait for an answer: the API's default confirm timeout (10 s), its 503 and a margin. */
export const DEFAULT_HTTP_TIMEOUT_MS = 15_000;

/** How many times the client sends a request again after a 503 `overloaded`, by default: about 3 s of waiting at the API's Retry-After of 1 s. */
export const DEFAULT_OVERLOAD_RETRIES = 3;

/**
 * The HTTP API's opt-out, mute and device routes for teams that do not speak AMQP. Every input is
 * checked with the same contract the API validates with, so a bad one throws ValidationError
 * before anything is sent; a refusal by the API throws HeraldApiError. A request refused 503
 * `overloaded` is sent again after its Retry-After (options.overloadRetries) before that is thrown.
 */
export interface HeraldHttpClient {
  /**
   * Register a device (POST /v1/devices); resolves once it is published to push.registrations. A
   * browser: `{ app, userId, platform: 'web', subscription: pushSubscription.toJSON() }` (or token = endpoint and keys).
   */
  registerDevice(device: z.input<typeof DeviceRegister>): Promise<void>;
  /** Unregister a device (DELETE /v1/devices); a browser subscription by its endpoint as token. */
  unregisterDevice(device: z.input<typeof DeviceUnregister>): Promise<void>;
  /** The app's VAPID public key, the applicationServerKey a web front end subscribes with (app: needed when the key acts for several apps). */
  vapidPublicKey(app?: string): Promise<VapidPublicKeyView>;
  /** The user gets no push of the category from the app (idempotent). */
  optOut(optOut: z.input<typeof OptOutChange>): Promise<OptOutView>;
  /** Opt back in; resolves to whether there was an opt-out to remove. */
  optIn(optOut: z.input<typeof OptOutChange>): Promise<boolean>;
  listOptOuts(user: z.input<typeof UserOfApp>): Promise<OptOutList>;
  /** No push about the object from the app until `until` (omitted: until unmuted). */
  mute(mute: z.input<typeof MuteCreate>): Promise<MuteView>;
  /** Resolves to whether there was a mute to remove. */
  unmute(mute: z.input<typeof MuteDelete>): Promise<boolean>;
  listMutes(user: z.input<typeof UserOfApp>): Promise<MuteList>;
  /** The user's devices of the app, valid and invalidated; tokens masked. */
  listDevices(user: z.input<typeof UserOfApp>): Promise<DeviceList>;
  /** Erase what Herald keeps of the user of the app (POST /v1/users:erase); resolves to what was removed and kept. */
  eraseUser(user: z.input<typeof UserErasureRequest>): Promise<UserErasureView>;
}

/** POST /v1/devices answers 202 { accepted: true }. */
const Accepted = z.object({ accepted: z.literal(true) });

/** What the API answered to one request: the value its contract reads, or its refusal. */
type Answer<T> = { ok: true; value: T } | { ok: false; refusal: Refusal };

interface Refusal {
  status: number;
  code: string;
  message: string;
  issues: ReadonlyArray<{ path: string; message: string }>;
  /** The answer's Retry-After, read (retryAfterMs); undefined when absent or unreadable. */
  retryAfterMs: number | undefined;
}

interface ApiRequest {
  method: string;
  path: string;
  body?: unknown;
}

/** Sends the request once; a refusal is a value, a timeout or a broken connection throws. */
async function sendOnce<S extends z.ZodType>(
  base: string,
  apiKey: string,
  req: ApiRequest,
  answer: S,
  signal: AbortSignal,
): Promise<Answer<z.infer<S>>> {
  const { method, path, body } = req;
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
    signal,
  });
  const text = await res.text();
  const retryAfter = retryAfterMs(res.headers.get('retry-after'));
  const refused = (code: string, message: string, issues: Refusal['issues'] = []): Answer<never> => ({
    ok: false,
    refusal: { status: res.status, code, message, issues, retryAfterMs: retryAfter },
  });
  let json: unknown;
  try {
    json = text.length > 0 ? JSON.parse(text) : {};
  } catch {
    return refused('not-json', `the API answered ${method} ${path} with something other than JSON: ${text.slice(0, 200)}`);
  }
  if (!res.ok) {
    const error = ApiErrorBody.safeParse(json);
    if (!error.success) return refused('unknown', text.slice(0, 200));
    return refused(error.data.error.code, error.data.error.message, error.data.error.issues);
  }
  return { ok: true, value: answer.parse(json) };
}

/** Nothing of a request refused so was done: the API refused it unread (apps/api body-bytes-in-flight.ts). */
const isOverloaded = (r: Refusal): boolean => r.status === 503 && r.code === 'overloaded';

function apiError(r: Refusal, attempts: number, why: string): HeraldApiError {
  return new HeraldApiError(r.status, r.code, `${r.message}${why}`, r.issues, {
    retryAfterS: r.retryAfterMs === undefined ? undefined : Math.ceil(r.retryAfterMs / 1000),
    attempts,
  });
}

export function createHeraldHttpClient(options: HeraldHttpClientOptions): HeraldHttpClient {
  const base = options.url.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS;
  const retries = options.overloadRetries ?? DEFAULT_OVERLOAD_RETRIES;
  if (!Number.isInteger(retries) || retries < 0)
    throw new RangeError(`overloadRetries must be a whole number, 0 or more: ${retries}`);
  /**
   * One call: the request, each attempt with its own timeoutMs, sent again after each 503
   * overloaded's Retry-After while overloadRetries allows and the wait is no longer than timeoutMs.
   */
  async function send<S extends z.ZodType>(method: string, path: string, answer: S, body?: unknown): Promise<z.infer<S>> {
    for (let attempt = 1; ; attempt++) {
      const result = await sendOnce(base, options.apiKey, { method, path, body }, answer, AbortSignal.timeout(timeoutMs));
      if (result.ok) return result.value;
      const refusal = result.refusal;
      if (!isOverloaded(refusal) || retries === 0) throw apiError(refusal, attempt, '');
      const sent = `; sent ${attempt === 1 ? 'once' : `${attempt} times`}`;
      if (attempt > retries) throw apiError(refusal, attempt, `${sent} (overloadRetries ${retries})`);
      if ((refusal.retryAfterMs ?? DEFAULT_OVERLOAD_WAIT_MS) > timeoutMs)
        throw apiError(refusal, attempt, `${sent}: its Retry-After is longer than timeoutMs (${timeoutMs} ms)`);
      await new Promise((resolve) => setTimeout(resolve, overloadWaitMs(refusal.retryAfterMs)));
    }
  }
  const userQuery = (user: z.input<typeof UserOfApp>): string => {
    const q = validate(UserOfApp, 'user', user);
    return new URLSearchParams({ app: q.app, userId: q.userId }).toString();
  };
  return {
    async registerDevice(device) {
      await send('POST', '/v1/devices', Accepted, validate(DeviceRegister, 'registration', device));
    },
    async unregisterDevice(device) {
      await send('DELETE', '/v1/devices', Accepted, validate(DeviceUnregister, 'registration', device));
    },
    vapidPublicKey: async (app) =>
      send(
        'GET',
        `/v1/web-push/vapid-public-key${app === undefined ? '' : `?${new URLSearchParams({ app }).toString()}`}`,
        VapidPublicKeyView,
      ),
    // async throughout: a refused input rejects the promise like every other failure.
    optOut: async (o) => send('POST', '/v1/opt-outs', OptOutView, validate(OptOutChange, 'opt-out', o)),
    optIn: async (o) => (await send('DELETE', '/v1/opt-outs', PreferenceRemoved, validate(OptOutChange, 'opt-out', o))).removed,
    listOptOuts: async (user) => send('GET', `/v1/opt-outs?${userQuery(user)}`, OptOutList),
    mute: async (m) => send('POST', '/v1/mutes', MuteView, validate(MuteCreate, 'mute', m)),
    unmute: async (m) => (await send('DELETE', '/v1/mutes', PreferenceRemoved, validate(MuteDelete, 'mute', m))).removed,
    listMutes: async (user) => send('GET', `/v1/mutes?${userQuery(user)}`, MuteList),
    listDevices: async (user) => send('GET', `/v1/devices?${userQuery(user)}`, DeviceList),
    eraseUser: async (user) => send('POST', '/v1/users:erase', UserErasureView, validate(UserErasureRequest, 'user', user)),
  };
}
