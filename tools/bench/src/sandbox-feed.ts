import http from 'node:http';
import { recordsAfter, type SandboxControl } from '../../../test/support/sandbox-client.ts';

export interface FeedRecord {
  seq: number;
  receivedAt: string;
  status: number;
  /** The publish time the bench stamped into the push's data, if present. */
  t?: number;
}

interface RawRecord {
  seq: number;
  receivedAt: string;
  status: number;
  body?: { data?: { t?: string }; message?: { data?: { t?: string } }; t?: string };
}

/**
 * Records newer than `after` (by seq), reduced to what the bench needs. Only those fields are
 * asked for: the whole record (headers, raw and parsed body, the answer) is several times the
 * size, and serialising and parsing it every second was CPU the sandbox's and the load
 * generator's rows counted against each push.
 */
export async function sandboxRecordsAfter(sandbox: SandboxControl, after: number): Promise<FeedRecord[]> {
  const records = await recordsAfter<RawRecord>(sandbox, after, ['seq', 'receivedAt', 'status', 'body']);
  return records.map((r) => {
    const t = r.body?.t ?? r.body?.message?.data?.t;
    return { seq: r.seq, receivedAt: r.receivedAt, status: r.status, ...(t !== undefined && { t: Number(t) }) };
  });
}

export async function sandboxStats(sandbox: SandboxControl): Promise<{ total: number; fcmConnections?: { direct: number; filtered: number } }> {
  return (await (await fetch(`${sandbox.settings.control.url}/stats`)).json()) as { total: number; fcmConnections?: { direct: number; filtered: number } };
}

/**
 * The sandbox's count of requests answered `status` (every platform together; all requests if no
 * status) once it reaches `atLeast`, or after `timeoutMs` whatever it is then (`GET /stats/wait`):
 * one request instead of polling `/stats`, each poll of which cost this process about 2 ms of CPU.
 */
export async function sandboxCounted(sandbox: SandboxControl, atLeast: number, timeoutMs: number, status?: number): Promise<number> {
  const query = `atLeast=${atLeast}&timeoutMs=${Math.max(0, Math.round(timeoutMs))}${status === undefined ? '' : `&status=${status}`}`;
  return ((await (await fetch(`${sandbox.settings.control.url}/stats/wait?${query}`)).json()) as { count: number }).count;
}

/**
 * Calls `onTotal` with the sandbox's count of every request it answered, at once and each
 * `everyMs` in which it changed (`GET /stats/stream`: one response that stays open), until
 * `close()`. For a reader that wants the count that often: a `GET /stats` each time cost this
 * process about 2 ms of CPU and the sandbox a request. `onError`: the stream could not be opened
 * or ended before `close()` (no more counts will come).
 */
export function sandboxTotals(sandbox: SandboxControl, everyMs: number, onTotal: (total: number) => void, onError: (err: Error) => void): { close(): void } {
  let closed = false;
  const fail = (err: Error): void => {
    if (!closed) onError(err);
    closed = true;
  };
  const req = http.get(`${sandbox.settings.control.url}/stats/stream?everyMs=${everyMs}`, (res) => {
    if (res.statusCode !== 200) return fail(new Error(`GET /stats/stream answered ${res.statusCode}`));
    let rest = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop() ?? '';
      const last = lines.at(-1);
      if (last !== undefined) onTotal((JSON.parse(last) as { total: number }).total);
    });
    res.on('close', () => fail(new Error('the sandbox ended its count stream')));
  });
  req.on('error', fail);
  return {
    close: () => {
      closed = true;
      req.destroy();
    },
  };
}
