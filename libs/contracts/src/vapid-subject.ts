/**
 * RFC 8292 §2.1: the VAPID `sub` claim is a contact the push service's operator can reach: a
 * `mailto:` address or an `https:` URL. Apple's push service refuses a subject on a host it
 * cannot reach (403 {"reason":"BadJwtToken"}, e.g. https://localhost or mailto:ops@localhost, as
 * web-push warns), and Herald counts that answer towards the app's ban; so every door refuses
 * such a subject before any push is signed with it.
 */

/** Names that never reach anyone beyond the machine or the site (RFC 6761, RFC 6762 .local, RFC 8375 home.arpa, ICANN's .internal). */
const LOCAL_SUFFIXES = ['localhost', 'local', 'internal', 'invalid', 'test', 'home.arpa'] as const;

const LABEL = /^[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?$/u;

/** Why `host` (a URL's hostname or an address's domain) is no place a push service's operator can reach; undefined when it is. */
function contactHostProblem(host: string): string | undefined {
  const name = host.toLowerCase().replace(/\.$/, '');
  const labels = name.split('.');
  const top = labels.at(-1) ?? '';
  // IPv6 in brackets; IPv4 in any spelling a resolver takes (127.1, 0x7f.0.0.1): a top label that is a number.
  if (name.startsWith('[') || name.includes(':') || /^(\d+|0x[0-9a-f]*)$/.test(top)) {
    return `"${host}" is an IP address (a loopback or private one reaches nobody outside, a public one changes hands): give a domain name`;
  }
  const local = LOCAL_SUFFIXES.find((s) => name === s || name.endsWith(`.${s}`));
  if (local !== undefined) return `"${host}" is a local name${name === local ? '' : ` (.${local})`} that no push service can reach`;
  if (labels.length < 2) return `"${host}" is a single-label host name: give a dotted domain (example.com)`;
  if (!labels.every((l) => LABEL.test(l))) return `"${host}" is not a domain name`;
  return undefined;
}

/** The domains of a mailto: URL's addresses (`ops@example.com` → `example.com`), percent-decoded; undefined where one has none. */
function mailtoDomains(url: URL): Array<string | undefined> {
  let to: string;
  try {
    to = decodeURIComponent(url.pathname);
  } catch {
    return [undefined];
  }
  return to.split(',').map((address) => {
    const at = address.lastIndexOf('@');
    return at > 0 && at < address.length - 1 ? address.slice(at + 1).trim() : undefined;
  });
}

/** How vapidSubjectProblem begins when the subject is a URL of the right scheme on a host no push service can reach. */
export const UNREACHABLE_SUBJECT = "must be a contact a push service can reach (RFC 8292 §2.1; Apple's answers 403 BadJwtToken to others)";

/**
 * What is wrong with a VAPID subject: not a mailto: or https: URL, a mailto: without an address,
 * or a contact on a host no push service can reach (localhost, an IP literal, a single label, a
 * local-only name). Undefined when it is fine; the message says what to give instead.
 */
export function vapidSubjectProblem(value: string): string | undefined {
  const bad = (why: string) => `must be a mailto: or https: URL (RFC 8292 §2.1): ${why}`;
  const unreachable = (why: string) => `${UNREACHABLE_SUBJECT}: ${why}`;
  // The URL parser drops surrounding spaces and tabs or newlines within, but the JWT carries the
  // value as given, and push services refuse it (a sub that is no URL): refused here instead.
  if (/\s/.test(value) || [...value].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) return bad('no spaces or control characters (the value is signed as given)');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return bad(`"${value.slice(0, 80)}" is not a URL`);
  }
  if (url.protocol === 'mailto:') {
    for (const domain of mailtoDomains(url)) {
      if (domain === undefined) return bad('a mailto: URL names an address (mailto:ops@example.com)');
      const host = contactHostProblem(domain);
      if (host !== undefined) return unreachable(`the address's domain ${host}`);
    }
    return undefined;
  }
  if (url.protocol !== 'https:') return bad(`got ${url.protocol.replace(/:$/, '')}`);
  const host = contactHostProblem(url.hostname);
  return host === undefined ? undefined : unreachable(`the host ${host}`);
}
