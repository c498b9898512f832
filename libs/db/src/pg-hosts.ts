import pg from 'pg';

/**
 * A PostgreSQL URL may list several hosts, as libpq takes them:
 * `postgres://herald@db-1:5432,db-2:5432/herald?target_session_attrs=read-write`. node-postgres
 * connects to one host only, so Herald picks the host per connection: the one that answered last,
 * else the next in the list; with `target_session_attrs=read-write` (or `primary`) a host that is
 * a standby (pg_is_in_recovery) is closed and the next one tried. A primary that moves is then
 * found the way a restarted one is: the connections to the old one fail, and the pool's next ones
 * go to the host that accepts writes.
 */
export interface PgHostList {
  /** One single-host URL per listed host, in order (target_session_attrs removed). */
  readonly urls: readonly string[];
  readonly readWrite: boolean;
}

const URL_PARTS = /^(postgres(?:ql)?:\/\/)([^@/]*@)?([^/?#]*)(.*)$/;

export function parseHostList(url: string): PgHostList {
  const m = URL_PARTS.exec(url);
  if (m === null) return { urls: [url], readWrite: false };
  const [, scheme = '', auth = '', hostPart = '', rest = ''] = m;
  const [path = '', query = ''] = rest.split('?', 2) as [string, string?];
  const params = new URLSearchParams(query);
  const attrs = params.get('target_session_attrs');
  params.delete('target_session_attrs');
  const q = params.toString();
  const hosts = hostPart.split(',').filter((h) => h.length > 0);
  const urls = (hosts.length === 0 ? [hostPart] : hosts).map((h) => `${scheme}${auth}${h}${path}${q === '' ? '' : `?${q}`}`);
  return { urls, readWrite: attrs === 'read-write' || attrs === 'primary' };
}

/** Thrown for a host that answered as a standby when the URL asks for read-write sessions. */
export class StandbyHostError extends Error {
  override readonly name = 'StandbyHostError';
}

/**
 * The host each new connection tries first: the one that last worked. A failure moves it on, so
 * the next connection (the pool retries on the next acquire) tries the next host.
 */
export class HostRotation {
  private index = 0;
  constructor(readonly list: PgHostList) {}

  get current(): string {
    return this.list.urls[this.index] as string;
  }

  failed(url: string): void {
    if (url === this.current) this.index = (this.index + 1) % this.list.urls.length;
  }
}

type ConnectCallback = ((err: Error) => void) | ((err: null, c: pg.Client) => void);

/**
 * A pg.Client class for a host list: each instance connects to the rotation's current host and,
 * for read-write URLs, refuses a standby. With one host and no target_session_attrs it is pg.Client.
 */
export function clientClassFor(url: string): typeof pg.Client {
  const list = parseHostList(url);
  if (list.urls.length === 1 && !list.readWrite) return pg.Client;
  const rotation = new HostRotation(list);
  return class MultiHostClient extends pg.Client {
    private readonly hostUrl: string;

    constructor(config?: string | pg.ClientConfig) {
      const hostUrl = rotation.current;
      super(typeof config === 'object' ? { ...config, connectionString: hostUrl } : hostUrl);
      this.hostUrl = hostUrl;
    }

    override connect(): Promise<pg.Client>;
    override connect(callback: ConnectCallback): void;
    override connect(callback?: ConnectCallback): Promise<pg.Client> | void {
      const done = this.checkedConnect().then(() => this as pg.Client);
      if (callback === undefined) return done;
      const cb = callback as (err: Error | null, c?: pg.Client) => void;
      done.then((c) => cb(null, c), (err: Error) => cb(err));
    }

    private async checkedConnect(): Promise<void> {
      // The connection can break during the standby check (a failover does just that). pg emits
      // 'error' on the client besides rejecting the query, and the pool listens only once connect
      // has resolved: unheard, the event crashed the process. The rejection below reports it.
      const duringCheck = (): void => undefined;
      this.on('error', duringCheck);
      try {
        await super.connect();
        if (list.readWrite) {
          const { rows } = await this.query<{ standby: boolean }>('select pg_catalog.pg_is_in_recovery() as standby');
          if (rows[0]?.standby === true) {
            await this.end().catch(() => undefined);
            throw new StandbyHostError(`${redactPgUrl(this.hostUrl)} is a standby; target_session_attrs=read-write wants the primary`);
          }
        }
      } catch (err) {
        rotation.failed(this.hostUrl);
        throw err;
      } finally {
        this.off('error', duringCheck);
      }
    }
  };
}

/** The URL with its password replaced, for messages. */
export function redactPgUrl(url: string): string {
  return url.replace(/(:\/\/[^:@/]*:)[^@/]*@/, '$1***@');
}
