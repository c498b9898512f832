/** One environment variable: how to read it, its default, and what it means (for the README). */
export interface VarSpec<T> {
  readonly description: string;
  /** Raw default; undefined means the variable is required. */
  readonly default?: string | undefined;
  readonly parse: (raw: string) => T;
  readonly secret?: boolean;
  /** Another variable that sets the same thing and wins when both are set (a newer name). */
  readonly alias?: string;
  /**
   * A duration in ms only ever compared with elapsed time, never a timer's delay: not held to
   * MAX_TIMER_MS as other *_MS settings are (load-config.ts), so a month may be given.
   */
  readonly comparedOnly?: boolean;
}

type Opts = { default?: string | undefined; secret?: boolean; alias?: string; comparedOnly?: boolean };

const spec = <T>(description: string, parse: (raw: string) => T, opts: Opts = {}): VarSpec<T> => ({
  description,
  parse,
  default: opts.default,
  secret: opts.secret ?? false,
  alias: opts.alias,
  ...(opts.comparedOnly === true && { comparedOnly: true }),
});

export const str = (description: string, opts?: Opts): VarSpec<string> =>
  spec(description, (raw) => {
    if (raw.length === 0) throw new Error('must not be empty');
    return raw;
  }, opts);

/** An optional string: empty or unset means undefined. */
export const optionalStr = (description: string, opts?: Omit<Opts, 'default'>): VarSpec<string | undefined> =>
  spec(description, (raw) => (raw.length === 0 ? undefined : raw), { ...opts, default: '' });

/**
 * An optional bearer key (an API or operator key): empty or unset means undefined. A key is one word:
 * one with a space or a line break (a file read whole, its newline kept) could never match the
 * Authorization header's, and every request with it failed 401 without a word at start. With
 * `minLength` (a key a person chose, such as HERALD_ADMIN_KEY, rather than one Herald minted), a
 * shorter one is refused at start: `admin` or a word from a list is guessed, and the port answering
 * it may be reachable from a whole cluster.
 */
export const optionalBearerKey = (
  description: string,
  opts: Omit<Opts, 'default'> & { minLength?: number } = {},
): VarSpec<string | undefined> => {
  const { minLength, ...rest } = opts;
  const described = minLength === undefined ? description : `${description}; at least ${minLength} characters (make one with \`openssl rand -hex 32\`)`;
  return spec(described, (raw) => {
    if (raw.length === 0) return undefined;
    if (/\s/.test(raw)) throw new Error('must not contain spaces or line breaks (a bearer key is one word: a trailing newline from a file?)');
    if (minLength !== undefined && raw.length < minLength)
      throw new Error(`must be at least ${minLength} characters, got ${raw.length} (a short key can be guessed): make one with \`openssl rand -hex 32\``);
    return raw;
  }, { ...rest, default: '' });
};

export const int = (description: string, opts: Opts & { min?: number; max?: number } = {}): VarSpec<number> =>
  spec(description, (raw) => {
    if (!/^-?\d+$/.test(raw.trim())) throw new Error(`must be an integer, got "${raw}"`);
    const n = Number(raw);
    if (opts.min !== undefined && n < opts.min) throw new Error(`must be at least ${opts.min}, got ${n}`);
    if (opts.max !== undefined && n > opts.max) throw new Error(`must be at most ${opts.max}, got ${n}`);
    return n;
  }, opts);

export const bool = (description: string, opts?: Opts): VarSpec<boolean> =>
  spec(description, (raw) => {
    const v = raw.trim().toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(v)) return true;
    if (['0', 'false', 'no', 'off'].includes(v)) return false;
    throw new Error(`must be true or false, got "${raw}"`);
  }, opts);

export const oneOf = <const T extends string>(values: readonly T[], description: string, opts?: Opts): VarSpec<T> =>
  spec(description, (raw) => {
    if (!(values as readonly string[]).includes(raw)) throw new Error(`must be one of ${values.join(', ')}, got "${raw}"`);
    return raw as T;
  }, opts);

/**
 * A URL as an error message may show it: whatever stands before the last '@' after the scheme (the
 * user and password) as `***`, and an authority holding a ':' not followed by a port alone (a user
 * and the start of a password, cut off by a ',' in a list). A password with an unescaped '/', '#',
 * '?' or ',' is the usual reason a URL does not parse, so its value must not reach stderr, the
 * pod's log and the log store.
 */
export function maskCredentials(raw: string): string {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)?(.*)$/s.exec(raw);
  const scheme = m?.[1] ?? '';
  const rest = m?.[2] ?? raw;
  const at = rest.lastIndexOf('@');
  if (at >= 0) return `${scheme}***@${rest.slice(at + 1)}`;
  const end = rest.search(/[/?#]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  const colon = authority.indexOf(':');
  return colon >= 0 && !/^\d*$/.test(authority.slice(colon + 1)) ? `${scheme}***${rest.slice(authority.length)}` : raw;
}

function checkUrl(raw: string, protocols: readonly string[]): void {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new Error(`must be a URL (percent-encode any '/', '#', '?' or '@' in the user or password), got "${maskCredentials(raw)}"`);
  }
  if (!protocols.includes(parsed.protocol.replace(/:$/, ''))) {
    throw new Error(`must use ${protocols.join(' or ')}, got ${parsed.protocol}`);
  }
}

export const url = (protocols: readonly string[], description: string, opts?: Opts): VarSpec<string> =>
  spec(description, (raw) => {
    checkUrl(raw, protocols);
    return raw;
  }, opts);

/**
 * A PostgreSQL URL, which may list several hosts as libpq takes them
 * (postgres://user@db-1:5432,db-2:5432/herald?target_session_attrs=read-write); kept as given.
 */
export const postgresUrl = (description: string, opts?: Opts): VarSpec<string> =>
  spec(description, (raw) => {
    const m = /^(postgres(?:ql)?:\/\/)([^@/]*@)?([^/?#]*)(.*)$/.exec(raw);
    if (m === null) throw new Error(`must be a postgres:// or postgresql:// URL, got "${maskCredentials(raw)}"`);
    for (const host of (m[3] ?? '').split(',')) checkUrl(`${m[1] ?? ''}${m[2] ?? ''}${host}${m[4] ?? ''}`, ['postgres', 'postgresql']);
    return raw;
  }, opts);

/** One URL or a comma-separated list of them (the nodes of a cluster); kept as given. */
export const urlList = (protocols: readonly string[], description: string, opts?: Opts): VarSpec<string> =>
  spec(description, (raw) => {
    const parts = raw.split(',').map((p) => p.trim()).filter((p) => p.length > 0);
    if (parts.length === 0) throw new Error('must list at least one URL');
    parts.forEach((p, i) => {
      try {
        checkUrl(p, protocols);
      } catch (err) {
        throw new Error(parts.length === 1 ? (err as Error).message : `entry ${i + 1} ${(err as Error).message}`, { cause: err });
      }
    });
    return parts.join(',');
  }, opts);

/** Comma-separated list of positive integers, e.g. a retry schedule "1000,5000,30000". */
export const intList = (description: string, opts?: Opts): VarSpec<number[]> =>
  spec(description, (raw) => {
    const parts = raw.split(',').map((p) => p.trim()).filter((p) => p.length > 0);
    if (parts.length === 0) throw new Error('must list at least one integer');
    return parts.map((p) => {
      if (!/^\d+$/.test(p) || Number(p) < 1) throw new Error(`must be comma-separated positive integers, got "${p}"`);
      return Number(p);
    });
  }, opts);

/** Comma-separated list of non-empty names, e.g. "campaign,ad". */
export const strList = (description: string, opts?: Opts): VarSpec<string[]> =>
  spec(description, (raw) => {
    const parts = raw.split(',').map((p) => p.trim()).filter((p) => p.length > 0);
    if (parts.length === 0) throw new Error('must list at least one name');
    return [...new Set(parts)];
  }, opts);
