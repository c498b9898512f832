/**
 * Before `npm start` starts anything: are the fixed ports its services will listen on free?
 * A port another process holds (say, a Herald started from another checkout) would otherwise
 * make that service fail to start, again and again.
 */
import { createServer } from 'node:net';
import { portHolder } from './process-info.ts';

export interface FixedPort {
  port: number;
  /** The setting that chose it, e.g. API_PORT. */
  setting: string;
  service: string;
}

/** Whether a listener could be opened on `host`:`port` now (tried and closed at once). */
function canListen(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** One sentence per fixed port (0: a free port is picked, never busy) that is taken, naming who holds it when /proc says. */
export async function busyPorts(ports: readonly FixedPort[], host = '127.0.0.1'): Promise<string[]> {
  const busy: string[] = [];
  for (const p of ports) {
    if (p.port === 0 || (await canListen(p.port, host))) continue;
    const holder = portHolder(p.port);
    const who = holder === undefined ? 'another process' : `pid ${holder.pid} (${holder.command ?? 'command unknown'})`;
    busy.push(`port ${p.port} (${p.setting}, for the ${p.service}) is held by ${who}`);
  }
  return busy;
}
