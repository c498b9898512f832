/** Hosts that count as "this machine" for WEBHOOK_ALLOW_HTTP_LOCALHOST. */
const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export const MAX_CALLBACK_URL_LENGTH = 2048;

/**
 * Why a subscription's callback URL is refused, or undefined if it is fine: an absolute https URL
 * without credentials or fragment; http only for localhost when `allowHttpLocalhost` (dev, tests).
 */
export function callbackUrlProblem(raw: string, options: { allowHttpLocalhost: boolean }): string | undefined {
  if (raw.length > MAX_CALLBACK_URL_LENGTH) return `must be at most ${MAX_CALLBACK_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  const local = LOCAL_HOSTS.has(url.hostname);
  if (url.protocol === 'http:') {
    if (!local) return 'must use https';
    if (!options.allowHttpLocalhost) return 'must use https (http is allowed only for localhost, when WEBHOOK_ALLOW_HTTP_LOCALHOST is set)';
  } else if (url.protocol !== 'https:') {
    return `must use https, not ${url.protocol.replace(/:$/, '')}`;
  }
  if (url.username !== '' || url.password !== '') return 'must not carry a user name or password';
  if (url.hash !== '') return 'must not have a fragment (#...)';
  if (url.hostname === '') return 'must name a host';
  return undefined;
}

/** host:port a URL sends to (the key of the per-destination concurrency bound and rate budget). */
export function destinationOf(raw: string): string {
  const url = new URL(raw);
  return `${url.hostname}:${url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80'}`;
}
