import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Queues } from '@herald/contracts';
import type { ClusterNode } from '@herald/testing';
import type { System } from '../support/system.ts';
import type { PlannedFault } from './chaos-plan.ts';

const run = promisify(execFile);

/** One injected fault: a SIGKILL of one service (restarted at once), or a broker or database restart. */
export interface FaultEvent {
  /** 'kill:<service>', 'rabbitmq' or 'postgresql'. */
  kind: string;
  startedAt: number;
  /** A killed service: when its replacement was spawned (only the killed process can have sent anything before). */
  respawnedAt?: number;
  /** When the service logged "started" again, or the broker/database answered again. */
  backAt: number;
}

/** `rabbitmqctl stop_app` + `start_app`: every connection is closed, queues stay on disk. */
export async function restartRabbitmq(): Promise<void> {
  await run('rabbitmqctl', ['-q', 'stop_app'], { timeout: 120_000 });
  await run('rabbitmqctl', ['-q', 'start_app'], { timeout: 120_000 });
  await run('rabbitmqctl', ['-q', 'await_startup'], { timeout: 120_000 });
}

/** `pg_ctlcluster … restart` (fast shutdown: every session is terminated) of the local cluster. */
export async function restartPostgresql(): Promise<void> {
  const { stdout } = await run('pg_lsclusters', ['-h']);
  const [version, cluster] = (stdout.split('\n').find((l) => l.includes(' 5432 ')) ?? '').trim().split(/\s+/);
  if (version === undefined || cluster === undefined) throw new Error(`no PostgreSQL cluster on port 5432 in:\n${stdout}`);
  await run('pg_ctlcluster', ['--skip-systemctl-redirect', version, cluster, 'restart'], { timeout: 120_000 });
  await run('pg_isready', ['-q', '-h', '127.0.0.1', '-p', '5432', '-t', '60'], { timeout: 70_000 });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** How long the cluster runs on two nodes, and then on one (no majority), in a node-loss moment. */
const ON_TWO_NODES_MS = 6_000;
const WITHOUT_MAJORITY_MS = 8_000;

/**
 * On the three-node cluster: SIGKILL the node leading push.jobs; with it still down, stop the node
 * leading push.apns.send (or another one) for a while, so every quorum queue loses its majority
 * and refuses writes; then start the stopped node and the killed one again.
 */
async function loseNodes(sys: System, log: (line: string) => void): Promise<FaultEvent[]> {
  const cluster = sys.cluster;
  if (cluster === undefined) throw new Error('a node-loss fault needs the system on the local cluster');
  const jobsLeader = await cluster.leaderOf(sys.vhost.name, Queues.jobs);
  const apnsLeader = await cluster.leaderOf(sys.vhost.name, Queues.apnsSend);
  const killedAt = Date.now();
  await cluster.kill(jobsLeader);
  log(`SIGKILL of herald-${jobsLeader}, leader of push.jobs (push.apns.send was led by herald-${apnsLeader})`);
  await sleep(ON_TWO_NODES_MS);
  const second: ClusterNode = apnsLeader !== jobsLeader ? apnsLeader : (((jobsLeader % 3) + 1) as ClusterNode);
  const stoppedAt = Date.now();
  await cluster.stopNode(second);
  log(`herald-${second} stopped too: one node of three, no majority`);
  await sleep(WITHOUT_MAJORITY_MS);
  await cluster.startNode(second);
  const secondBack = Date.now();
  await cluster.startNode(jobsLeader);
  return [
    { kind: `node-kill:herald-${jobsLeader}`, startedAt: killedAt, backAt: Date.now() },
    { kind: `node-stop:herald-${second}`, startedAt: stoppedAt, backAt: secondBack },
  ];
}

export interface InjectorHooks {
  /** Called right before services are killed (last chance to read their counters). */
  beforeKill(names: readonly string[]): Promise<void>;
  log(line: string): void;
}

async function inject(sys: System, fault: PlannedFault, hooks: InjectorHooks): Promise<FaultEvent[]> {
  const { action } = fault;
  if (action.kind === 'node-loss') return loseNodes(sys, hooks.log);
  if (action.kind !== 'kill') {
    const startedAt = Date.now();
    await (action.kind === 'rabbitmq' ? restartRabbitmq() : restartPostgresql());
    return [{ kind: action.kind, startedAt, backAt: Date.now() }];
  }
  await hooks.beforeKill(action.services);
  const startedAt = Date.now();
  await Promise.all(action.services.map((name) => sys.service(name).stop('SIGKILL')));
  const respawnedAt = Date.now();
  return Promise.all(
    action.services.map(async (name) => {
      await sys.service(name).start(60_000);
      return { kind: `kill:${name}`, startedAt, respawnedAt, backAt: Date.now() };
    }),
  );
}

/** Services that exited without being told to (a crash is a finding, not noise). */
export function exitedOnTheirOwn(sys: System): string[] {
  return [...sys.services.values()].filter((s) => !s.running).map((s) => `${s.name}:\n${s.tail(15)}`);
}

/**
 * Runs the planned faults one after another, each at its planned time after `startAt` (or as
 * soon as the previous one has recovered). Stops at the first service that died by itself.
 */
export async function runFaults(sys: System, faults: readonly PlannedFault[], startAt: number, hooks: InjectorHooks): Promise<FaultEvent[]> {
  const events: FaultEvent[] = [];
  for (const fault of faults) {
    await new Promise((r) => setTimeout(r, Math.max(0, startAt + fault.atMs - Date.now())));
    const crashed = exitedOnTheirOwn(sys);
    if (crashed.length > 0) throw new Error(`services exited on their own:\n${crashed.join('\n')}`);
    const happened = await inject(sys, fault, hooks);
    events.push(...happened);
    const first = happened[0] as FaultEvent;
    const back = Math.max(...happened.map((e) => e.backAt));
    hooks.log(`fault at +${((first.startedAt - startAt) / 1000).toFixed(1)} s (${new Date(first.startedAt).toISOString()}): ${happened.map((e) => e.kind).join(', ')} — back after ${((back - first.startedAt) / 1000).toFixed(1)} s`);
  }
  return events;
}
