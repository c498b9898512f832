/**
 * What a failed chaos run prints so that its cause can be found from the CI output alone (a clean
 * clone's service logs go with the clone): where the work left in the broker sits (ready, or held
 * unacknowledged by which connection), what the ledger says of each lost push, and the pushers' log
 * lines that name it.
 */
import { derivePushId } from '@herald/contracts';
import { managementRequest } from '@herald/testing';
import type { System } from '../support/system.ts';
import { workQueues } from './observe.ts';

interface QueueRow {
  name: string;
  messages?: number;
  /** At-least-once dead-lettering: expired messages the queue holds until their target confirms them (counted in `messages`). */
  messages_dlx?: number;
  messages_ready?: number;
  messages_unacknowledged?: number;
  consumers?: number;
  leader?: string;
  members?: string[];
  online?: string[];
}

interface ChannelRow {
  name: string;
  messages_unacknowledged?: number;
  consumer_count?: number;
  prefetch_count?: number;
  state?: string;
  node?: string;
}

interface ConnectionRow {
  name: string;
  client_properties?: { connection_name?: string };
}

const enc = encodeURIComponent;

async function get<T>(sys: System, path: string): Promise<T | string> {
  try {
    const res = await managementRequest('GET', path, undefined, sys.managementApi);
    return res.ok ? res.json<T>() : `${res.status} ${res.body.slice(0, 200)}`;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Work queues with messages in them, and the channels holding unacknowledged deliveries (with the client's connection name). */
async function brokerLines(sys: System): Promise<string[]> {
  const v = enc(sys.vhost.name);
  const work = new Set<string>(workQueues(sys));
  const queues = await get<QueueRow[]>(sys, `/queues/${v}?columns=name,messages,messages_dlx,messages_ready,messages_unacknowledged,consumers,leader,members,online`);
  const channels = await get<ChannelRow[]>(sys, `/vhosts/${v}/channels?columns=name,messages_unacknowledged,consumer_count,prefetch_count,state,node`);
  const connections = await get<ConnectionRow[]>(sys, `/vhosts/${v}/connections?columns=name,client_properties`);
  const lines: string[] = [];
  if (typeof queues === 'string') lines.push(`queues: ${queues}`);
  else {
    for (const q of queues.filter((x) => work.has(x.name) && (x.messages ?? 0) > 0)) {
      lines.push(`queue ${q.name}: messages ${q.messages ?? 0} (ready ${q.messages_ready ?? 0}, unacked ${q.messages_unacknowledged ?? 0}, waiting to be dead-lettered ${q.messages_dlx ?? 0}), consumers ${q.consumers ?? 0}, leader ${q.leader ?? '?'}, online ${(q.online ?? []).length}/${(q.members ?? []).length}`);
    }
  }
  const names = new Map(typeof connections === 'string' ? [] : connections.map((c) => [c.name, c.client_properties?.connection_name ?? '?']));
  if (typeof channels === 'string') lines.push(`channels: ${channels}`);
  else {
    for (const c of channels.filter((x) => (x.messages_unacknowledged ?? 0) > 0)) {
      const conn = c.name.replace(/ \(\d+\)$/, '');
      lines.push(`channel ${c.name} (${names.get(conn) ?? '?'}, ${c.node ?? '?'}): unacked ${c.messages_unacknowledged}, consumers ${c.consumer_count ?? 0}, prefetch ${c.prefetch_count ?? 0}, ${c.state ?? '?'}`);
    }
  }
  return lines;
}

/** The ledger row and the pushers' last log lines for each lost push (at most `limit`). */
async function pushLines(sys: System, lost: readonly { key: string; jobId: string; token: string }[], limit: number): Promise<string[]> {
  const db = sys.database.db.kysely;
  const devices = await db.selectFrom('devices').select(['id', 'token']).execute();
  const deviceIds = new Map(devices.map((d) => [d.token, String(d.id)]));
  const ids = new Map<string, string>();
  for (const l of lost.slice(0, limit)) {
    const deviceId = deviceIds.get(l.token);
    if (deviceId !== undefined) ids.set(derivePushId(l.jobId, deviceId), l.key);
  }
  const rows = ids.size === 0 ? [] : await db.selectFrom('delivery_ledger').selectAll().where('push_id', 'in', [...ids.keys()]).execute();
  const scheduled = ids.size === 0 ? [] : await db.selectFrom('scheduled_pushes').select(['push_id', 'due_at']).where('push_id', 'in', [...ids.keys()]).execute();
  const logs = [...sys.services.values()].filter((s) => s.name.includes('pusher')).flatMap((s) => s.logs.map((l) => ({ service: s.name, l })));
  const lines: string[] = [];
  for (const [pushId, key] of ids) {
    const row = rows.find((r) => r.push_id === pushId);
    const due = scheduled.find((r) => r.push_id === pushId);
    lines.push(`push ${key} (${pushId}): ledger ${row === undefined ? 'no row' : `${row.state} outcome ${row.outcome ?? '-'} owner ${row.owner || '-'} claimed ${row.claimed_at.toISOString()}`}${due === undefined ? '' : `, scheduled for ${due.due_at.toISOString()}`}`);
    const mentions = logs.filter(({ l }) => JSON.stringify(l).includes(pushId)).slice(-4);
    for (const { service, l } of mentions) lines.push(`    ${service}: ${JSON.stringify(l).slice(0, 400)}`);
  }
  return lines;
}

/** Pushes still held for a due time, and the earliest due time: work a descheduler should have released. */
async function scheduledLine(sys: System): Promise<string> {
  const row = await sys.database.db.kysely
    .selectFrom('scheduled_pushes')
    .select((eb) => [eb.fn.countAll<string>().as('n'), eb.fn.min('due_at').as('first')])
    .executeTakeFirst();
  const n = Number(row?.n ?? 0);
  return n === 0 ? 'scheduled pushes: none' : `scheduled pushes: ${n}, the first due ${new Date(row?.first as Date).toISOString()} (now ${new Date().toISOString()})`;
}

/** Prints what a reader needs to find why pushes were lost or the work did not drain. */
export async function printPostMortem(sys: System, lost: readonly { key: string; jobId: string; token: string }[]): Promise<void> {
  const scheduled = await scheduledLine(sys).catch((err: Error) => `scheduled pushes: ${err.message}`);
  const lines = [...(await brokerLines(sys)), scheduled, ...(await pushLines(sys, lost, 20).catch((err: Error) => [`ledger: ${err.message}`]))];
  console.log(['chaos post-mortem:', ...lines.map((l) => `  ${l}`)].join('\n'));
}
