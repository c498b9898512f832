import { randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { startSystem, type System } from '../support/system.ts';
import { CHAOS_SERVICES, chaosPlan } from './chaos-plan.ts';
import { keepLogs, runAndCheck, sandboxFaults } from './chaos-run.ts';
import { registerAll } from './job-stream.ts';
import { lockMachine } from './machine-lock.ts';

const LONG = process.env['CHAOS_LONG'] === '1';
const seed = Number(process.env['CHAOS_SEED'] ?? randomInt(2 ** 31 - 1));
const plan = chaosPlan(LONG ? 'long' : 'short', seed);
/**
 * Short, so a SIGKILLed pusher's claims are taken over quickly (the duplicate window is one lease);
 * the pushers cap provider request timeouts at 40% of it (3.2 s), so a slow live send keeps its claim.
 */
const LEASE_MS = 8_000;
const log = (line: string): void => console.log(`chaos: ${line}`);

describe(`chaos, ${plan.form} form (seed ${seed})`, () => {
  let sys: System;
  let unlock: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    unlock = await lockMachine(log);
    log(`seed ${seed} (CHAOS_SEED=${seed} replays this plan), ${plan.form} form: ${plan.jobs.length} jobs, ${plan.devices.length} devices, ${plan.faults.length} fault moments`);
    sys = await startSystem({ only: CHAOS_SERVICES, env: { LEDGER_LEASE_MS: String(LEASE_MS) } });
    await sandboxFaults(sys, plan.devices);
    await registerAll(sys, plan.devices);
  });
  afterAll(async () => {
    try {
      if (sys !== undefined) await keepLogs(sys, log);
      await sys?.stop();
    } finally {
      await unlock?.();
    }
  });

  it('accounts for every device push while services are SIGKILLed and RabbitMQ and PostgreSQL restart', async () => {
    await runAndCheck(sys, plan, { leaseMs: LEASE_MS, long: LONG, log });
  }, LONG ? 3_600_000 : 300_000);
});
