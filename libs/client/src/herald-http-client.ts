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
import { validate } from './validation.ts';

/** The HTTP API refused the request (4xx) or failed (5xx): its status, error code and the fields it named. */
export class HeraldApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly issues: ReadonlyArray<{ path: string; message: string }> = [],
  ) {
    super(`${status} ${code}: ${message}`);
    this.name = 'HeraldApiError';
  }
}

export interface HeraldHttpClientOptions {
  /** The HTTP API's base URL, e.g. http://127.0.0.1:8080. */
  url: string;
  /** A team API key (herald keys create). */
  apiKey: string;
  /**
   * Per request; default DEFAULT_HTTP_TIMEOUT_MS (15 s). Keep it above the API's
   * API_PUBLISH_CONFIRM_TIMEOUT_MS (10 s by default): a client giving up first, while RabbitMQ
   * stalls, got a TimeoutError where the API was about to answer 503 saying which jobs may still arrive.
   */
  timeoutMs?: number;
}

/** The client's default wait for an answer: the API's default confirm timeout (10 s), its 503 and a margin. */
export const DEFAULT_HTTP_TIMEOUT_MS = 15_000;

/**
 * The HTTP API's opt-out, mute and device routes for teams that do not speak AMQP. Every input is
 * checked with the same contract the API validates with, so a bad one throws ValidationError
 * before anything is sent; a refusal by the API throws HeraldApiError.
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

export function createHeraldHttpClient(options: HeraldHttpClientOptions): HeraldHttpClient {
  const base = options.url.replace(/\/+$/, '');
  async function send<S extends z.ZodType>(method: string, path: string, answer: S, body?: unknown): Promise<z.infer<S>> {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${options.apiKey}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
      ...(body !== undefined && { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(options.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = text.length > 0 ? JSON.parse(text) : {};
    } catch {
      throw new HeraldApiError(res.status, 'not-json', `the API answered ${method} ${path} with something other than JSON: ${text.slice(0, 200)}`);
    }
    if (!res.ok) {
      const error = ApiErrorBody.safeParse(json);
      if (!error.success) throw new HeraldApiError(res.status, 'unknown', text.slice(0, 200));
      throw new HeraldApiError(res.status, error.data.error.code, error.data.error.message, error.data.error.issues);
    }
    return answer.parse(json);
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
      send('GET', `/v1/web-push/vapid-public-key${app === undefined ? '' : `?${new URLSearchParams({ app }).toString()}`}`, VapidPublicKeyView),
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
