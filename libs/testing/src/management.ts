import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

/** The RabbitMQ management API the tests use; override with HERALD_TEST_RABBITMQ_API. */
export const MANAGEMENT_API = process.env['HERALD_TEST_RABBITMQ_API'] ?? 'http://guest:guest@127.0.0.1:15672/api';

export interface ManagementResponse {
  readonly status: number;
  readonly ok: boolean;
  readonly body: string;
  json<T>(): T;
}

const ATTEMPT_TIMEOUT_MS = 15_000;
const GIVE_UP_AFTER_MS = 60_000;

/** One request on a fresh connection (no keep-alive: the broker may close an idle socket just as it is reused). */
function once(method: string, path: string, body: unknown, api: string): Promise<ManagementResponse> {
  const base = new URL(api);
  const auth = Buffer.from(`${decodeURIComponent(base.username)}:${decodeURIComponent(base.password)}`).toString('base64');
  const target = new URL(`${base.pathname.replace(/\/$/, '')}${path}`, base);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      target,
      {
        method,
        agent: false,
        timeout: ATTEMPT_TIMEOUT_MS,
        headers: {
          authorization: `Basic ${auth}`,
          ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          resolve({ status, ok: status >= 200 && status < 300, body: text, json: <T>() => JSON.parse(text) as T });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${ATTEMPT_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * A management API call for tests. Connection failures, timeouts and 5xx answers are retried
 * with back-off for up to a minute (the API restarts with the broker and is briefly overloaded
 * when many test files create vhosts at once); 4xx answers are returned to the caller. `api` may
 * list a cluster's nodes (comma-separated): each retry asks the next one.
 */
export async function managementRequest(method: string, path: string, body?: unknown, api = MANAGEMENT_API): Promise<ManagementResponse> {
  const apis = api.split(',').map((a) => a.trim()).filter((a) => a.length > 0);
  const deadline = Date.now() + GIVE_UP_AFTER_MS;
  for (let attempt = 1; ; attempt++) {
    let failure: string;
    try {
      const res = await once(method, path, body, apis[(attempt - 1) % apis.length] as string);
      if (res.status < 500) return res;
      failure = `${res.status} ${res.body.slice(0, 200)}`;
    } catch (err) {
      failure = (err as Error).message;
    }
    if (Date.now() >= deadline) throw new Error(`RabbitMQ management ${method} ${path} failed after ${attempt} attempts: ${failure}`);
    await sleep(attempt < apis.length ? 0 : Math.min(200 * 2 ** attempt, 3_000));
  }
}
