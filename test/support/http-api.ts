import { randomBytes } from 'node:crypto';
import type { Sandbox } from '@herald/sandbox';
import type { System } from './system.ts';

/** Env for a system whose API has admin routes and can seal credentials. */
export const API_TEST_ENV = {
  HERALD_SECRET_KEY: randomBytes(32).toString('hex'),
  HERALD_ADMIN_KEY: `admin-${randomBytes(16).toString('hex')}`,
  API_KEY_CACHE_TTL_MS: '0',
};

export interface ApiAnswer<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Headers;
}

/** The HTTP API's base URL, from the port its process logged. */
export function apiUrl(sys: System): string {
  const line = sys.service('api').logs.findLast((l) => typeof l['apiPort'] === 'number');
  if (line === undefined) throw new Error('the api has not logged its port');
  return `http://127.0.0.1:${String(line['apiPort'])}`;
}

/** One request; `body` objects are sent as JSON, strings and Buffers as they are (with `contentType`). */
export async function call<T = Record<string, unknown>>(
  sys: System,
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; contentType?: string } = {},
): Promise<ApiAnswer<T>> {
  const headers: Record<string, string> = {};
  if (opts.key !== undefined) headers['authorization'] = `Bearer ${opts.key}`;
  let body: string | Buffer | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' || Buffer.isBuffer(opts.body) ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] = opts.contentType ?? 'application/json';
  }
  const res = await fetch(`${apiUrl(sys)}${path}`, { method, headers, ...(body !== undefined && { body }) });
  const text = await res.text();
  return { status: res.status, body: (text.length > 0 ? JSON.parse(text) : {}) as T, headers: res.headers };
}

export const admin = (sys: System, method: string, path: string, body?: unknown) =>
  call(sys, method, path, { key: API_TEST_ENV.HERALD_ADMIN_KEY, ...(body !== undefined && { body }) });

/** A team key for these apps, created through the admin API. */
export async function teamKey(sys: System, team: string, apps: string[]): Promise<string> {
  const r = await admin(sys, 'POST', '/admin/keys', { team, apps });
  if (r.status !== 201) throw new Error(`key create: ${r.status} ${JSON.stringify(r.body)}`);
  return String(r.body['key']);
}

/** Fresh credentials the sandbox will accept (POST /credentials on its control API). */
export async function mintApnsKey(sandbox: Sandbox, teamId?: string): Promise<{ keyId: string; teamId: string; keyPem: string }> {
  return mint(sandbox, { platform: 'apns', ...(teamId !== undefined && { teamId }) });
}
export async function mintFcmProject(sandbox: Sandbox, projectId?: string): Promise<{ projectId: string; accessToken: string }> {
  return mint(sandbox, { platform: 'fcm', ...(projectId !== undefined && { projectId }) });
}
async function mint<T>(sandbox: Sandbox, body: object): Promise<T> {
  const res = await fetch(`${sandbox.settings.control.url}/credentials`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (res.status !== 201) throw new Error(`sandbox credentials: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** An app on both platforms with its own sandbox credentials (endpoint "local"). */
export async function createAppWithOwnCredentials(sys: System, id: string): Promise<{ apns: { keyId: string; teamId: string }; fcm: { projectId: string } }> {
  const apns = await mintApnsKey(sys.sandbox);
  const fcm = await mintFcmProject(sys.sandbox);
  const r = await admin(sys, 'POST', '/admin/apps', {
    id,
    apnsTopic: `com.example.${id}`,
    apns: { auth: 'token', keyPem: apns.keyPem, keyId: apns.keyId, teamId: apns.teamId, endpoint: 'local' },
    fcm: { auth: 'access-token', accessToken: fcm.accessToken, projectId: fcm.projectId, endpoint: 'local' },
  });
  if (r.status !== 201) throw new Error(`app create: ${r.status} ${JSON.stringify(r.body)}`);
  return { apns: { keyId: apns.keyId, teamId: apns.teamId }, fcm: { projectId: fcm.projectId } };
}

/** The JWT header `kid` and claim `iss` of an APNs request's authorization header. */
export function apnsTokenIdentity(authorization: string | undefined): { keyId: unknown; teamId: unknown } {
  const [header = '', claims = ''] = (authorization ?? '').replace(/^bearer\s+/i, '').split('.');
  const decode = (part: string) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
  return { keyId: decode(header)['kid'], teamId: decode(claims)['iss'] };
}
