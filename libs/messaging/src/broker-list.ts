import type { Options } from 'amqplib';

/**
 * The brokers of one AMQP setting: a single URL, or a comma-separated list of the nodes of a
 * RabbitMQ cluster (`AMQP_URLS=amqp://…@rabbit-1:5672/herald,amqp://…@rabbit-2:5672/herald`).
 */
export function brokerUrls(setting: string): string[] {
  const urls = setting
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u.length > 0);
  if (urls.length === 0) throw new Error('no broker URL given');
  return urls;
}

/** The first broker URL of a setting: where its vhost and credentials are read from. */
export const firstBrokerUrl = (setting: string): string => brokerUrls(setting)[0] as string;

/** Quick hops to the next node (a failover), then exponential back-off once every node was tried. */
const HOP_DELAY_MS = 100;
const FIRST_ROUND_DELAY_MS = 250;
const MAX_DELAY_MS = 5_000;

/**
 * Where amqplib connects next, as its object form of a URL. amqplib's connection recovery opens
 * every new connection from the same target and asks `calculateDelay` before each new attempt;
 * `next()` is called from there, so each attempt after a failure goes to the next node of the
 * list, and a node that dies hands its clients to a live one.
 */
export class BrokerRotation {
  private readonly targets: Options.Connect[];
  private index: number;

  constructor(readonly urls: readonly string[], start = Math.floor(Math.random() * urls.length)) {
    this.targets = urls.map(toConnectTarget);
    this.index = start % urls.length;
  }

  /** The URL the next (or current) connection uses. */
  get current(): string {
    return this.urls[this.index] as string;
  }

  /** A stable object whose fields always describe the current node. */
  target(): Options.Connect {
    const target = (): Options.Connect => this.targets[this.index] as Options.Connect;
    return {
      get protocol() { return target().protocol; },
      get hostname() { return target().hostname; },
      get port() { return target().port; },
      get username() { return target().username; },
      get password() { return target().password; },
      get vhost() { return target().vhost; },
      get heartbeat() { return target().heartbeat; },
      get frameMax() { return target().frameMax; },
      get locale() { return target().locale; },
    };
  }

  /** Moves to the next node; returns how long to wait first (attempt counts from 1 after a loss). */
  next(attempt: number): number {
    this.index = (this.index + 1) % this.urls.length;
    const round = Math.floor((attempt - 1) / this.urls.length);
    if (round === 0 && this.urls.length > 1) return HOP_DELAY_MS;
    const base = Math.min(MAX_DELAY_MS, FIRST_ROUND_DELAY_MS * 2 ** Math.max(0, round - (this.urls.length > 1 ? 1 : 0)));
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }
}

function toConnectTarget(url: string): Options.Connect {
  const u = new URL(url);
  const protocol = u.protocol.replace(/:$/, '');
  const query = u.searchParams;
  const num = (name: string): number | undefined => (query.has(name) ? Number(query.get(name)) : undefined);
  const vhost = decodeURIComponent(u.pathname.slice(1));
  return {
    protocol,
    hostname: u.hostname.replace(/^\[|\]$/g, ''),
    port: u.port === '' ? (protocol === 'amqps' ? 5671 : 5672) : Number(u.port),
    username: decodeURIComponent(u.username) || 'guest',
    password: decodeURIComponent(u.password) || 'guest',
    vhost: vhost === '' ? '/' : vhost,
    heartbeat: num('heartbeat'),
    frameMax: num('frame_max') ?? num('frameMax'),
    locale: query.get('locale') ?? undefined,
  };
}
