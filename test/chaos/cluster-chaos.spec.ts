/**
 * The chaos run on the local three-node RabbitMQ cluster (infra/local/rabbitmq-cluster.sh) with two
 * processes of every service on the delivery path: during the stream, the node leading push.jobs
 * is SIGKILLed, a second node is stopped for a while (no majority: the queues refuse writes and the
 * publishers hold), both come back; services are SIGKILLed and PostgreSQL restarts as in the
 * single-broker run. The short form runs in `npm test`, the long form with `npm run chaos`.
 */
import { randomInt } from 'node:crypto';
import { startLocalCluster } from '@herald/testing';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { startExtraService, startSystem, type System } from '../support/system.ts';
import { CHAOS_SERVICES, chaosPlan } from './chaos-plan.ts';
import { keepLogs, runAndCheck, sandboxFaults } from './chaos-run.ts';
import { registerAll } from './job-stream.ts';
import { lockMachine } from './machine-lock.ts';

const LONG = process.env['CHAOS_LONG'] === '1';
const seed = Number(process.env['CHAOS_SEED'] ?? randomInt(2 ** 31 - 1));
const plan = chaosPlan(LONG ? 'long' : 'short', seed, { cluster: true });
const LEASE_MS = 8_000;
const log = (line: string): void => console.log(`cluster chaos: ${line}`);

describe(`chaos on the three-node cluster, ${plan.form} form (seed ${seed})`, () => {
  let sys: System;
  let unlock: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    unlock = await lockMachine(log);
    const cluster = await startLocalCluster();
    log(`seed ${seed}, ${plan.form} form: ${plan.jobs.length} jobs, ${plan.devices.length} devices, ${plan.faults.length} fault moments, two processes of each of ${CHAOS_SERVICES.length} services`);
    sys = await startSystem({ only: CHAOS_SERVICES, env: { LEDGER_LEASE_MS: String(LEASE_MS) }, cluster });
    await Promise.all(CHAOS_SERVICES.map((name) => startExtraService(sys, name)));
    await sandboxFaults(sys, plan.devices);
    await registerAll(sys, plan.devices);
  }, 600_000);
  afterAll(async () => {
    try {
      if (sys !== undefined) await keepLogs(sys, log);
      await sys?.stop();
    } finally {
      await unlock?.();
    }
  }, 600_000);

  it('accounts for every device push while broker nodes are lost, services are SIGKILLed and PostgreSQL restarts', async () => {
    await runAndCheck(sys, plan, { leaseMs: LEASE_MS, long: LONG, log, drainMs: 180_000 });
  }, LONG ? 3_600_000 : 600_000);
});
