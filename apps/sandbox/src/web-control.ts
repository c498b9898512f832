import { json, type Answer, type SandboxContext } from './exchange.ts';
import { WebPushServices, type WebPushService } from './web-vapid.ts';

const RAW_P256 = /^[A-Za-z0-9_-]{86,88}={0,2}$/;

function body(raw: Buffer): Record<string, unknown> | undefined {
  if (raw.length === 0) return {};
  try {
    const value = JSON.parse(raw.toString('utf8')) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `POST /web/subscriptions {applicationServerKey?, service?}`: what `pushManager.subscribe()` would
 * give a page; `service: "apple"` for Safari's (Apple's answers), else `generic` (RFC 8292's).
 */
function subscribe(raw: Buffer, ctx: SandboxContext): Answer {
  const store = ctx.web;
  if (store === undefined) return json(404, { error: 'this sandbox has no Web Push service' });
  const o = body(raw);
  if (o === undefined) return json(400, { error: 'body must be a JSON object' });
  const key = o['applicationServerKey'];
  if (key !== undefined) {
    const decoded = typeof key === 'string' && RAW_P256.test(key) ? Buffer.from(key, 'base64url') : undefined;
    if (decoded?.length !== 65 || decoded[0] !== 4) return json(400, { error: 'applicationServerKey must be an uncompressed P-256 public key, base64url (65 bytes)' });
  }
  const service = o['service'] ?? 'generic';
  if (!(WebPushServices as readonly unknown[]).includes(service)) return json(400, { error: `service must be one of ${WebPushServices.join(', ')}` });
  return json(201, store.subscribe(typeof key === 'string' ? key.replace(/=+$/, '') : undefined, service as WebPushService));
}

/** The `/web` routes (subscriptions and received pushes), or undefined for any other route. */
export function routeWeb(method: string, url: URL, raw: Buffer, ctx: SandboxContext): Answer | undefined {
  const store = ctx.web;
  const endpoint = url.searchParams.get('endpoint') ?? undefined;
  switch (`${method} ${url.pathname}`) {
    case 'POST /web/subscriptions':
      return subscribe(raw, ctx);
    case 'DELETE /web/subscriptions': {
      if (endpoint === undefined) return json(400, { error: 'give ?endpoint=' });
      return store?.unsubscribe(endpoint) === true ? json(200, { endpoint, gone: true }) : json(404, { error: 'no such subscription' });
    }
    case 'GET /web/pushes':
      return json(200, store?.pushes(endpoint) ?? []);
    case 'DELETE /web/pushes':
      store?.clearPushes();
      return json(200, { cleared: true });
    default:
      return undefined;
  }
}
