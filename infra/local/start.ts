/**
 * `npm start`: bring up RabbitMQ and PostgreSQL, apply topology and migrations, then run the
 * sandbox and every service, restarting any that dies. Ctrl-C stops them all gracefully.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { commonConfig, intList, loadConfig, str } from '@herald/config';
import { createLogger } from '@herald/logging';
import { buildServices, serviceNodeArgs } from './build-services.ts';
import { prepareEnvironment } from './prepare.ts';
import { SANDBOX, SERVICES } from './service-list.ts';

const config = loadConfig(
  {
    ...commonConfig,
    SANDBOX_STATE_DIR: str('Sandbox state directory', { default: '.herald/sandbox' }),
    HERALD_RETRY_DELAYS_MS: intList('Retry schedule', { default: '1000,5000,30000,120000,600000' }),
  },
  process.env,
);
const logger = createLogger({ service: 'herald-start', level: config.LOG_LEVEL, format: config.LOG_FORMAT });
const childFormat = process.stdout.isTTY ? 'pretty' : 'json';

const services = spawnSync('bash', [join(import.meta.dirname, 'services.sh')], { stdio: 'inherit' });
if (services.status !== 0) process.exit(services.status ?? 1);

await prepareEnvironment({
  amqpUrl: config.AMQP_URL,
  databaseUrl: config.DATABASE_URL,
  schema: config.DATABASE_SCHEMA,
  retryDelaysMs: config.HERALD_RETRY_DELAYS_MS,
  logger,
  seedApps: [{ id: 'demo', apnsTopic: 'com.herald.demo' }],
});

await buildServices();
logger.info('services built into dist/services');

const children = new Map<string, ChildProcess>();
let stopping = false;

function run(name: string): ChildProcess {
  const child = spawn(process.execPath, serviceNodeArgs(name), {
    // Local only: webhook subscriptions may call back to http://localhost receivers.
    env: { ...process.env, LOG_FORMAT: process.env['LOG_FORMAT'] ?? childFormat, WEBHOOK_ALLOW_HTTP_LOCALHOST: process.env['WEBHOOK_ALLOW_HTTP_LOCALHOST'] ?? 'true' },
    stdio: 'inherit',
    // Own process group: a terminal's Ctrl-C reaches only this supervisor, which then sends
    // each service exactly one SIGTERM (a second signal would make a service exit at once).
    detached: true,
  });
  children.set(name, child);
  child.on('exit', (code, signal) => {
    children.delete(name);
    if (stopping) return;
    logger.error({ service: name, code, signal }, 'service exited: restarting in 2 s');
    setTimeout(() => run(name), 2000);
  });
  return child;
}

const sandboxFile = join(config.SANDBOX_STATE_DIR, 'sandbox.json');
const startedAt = Date.now();
run(SANDBOX.name);
while (!existsSync(sandboxFile) || statSync(sandboxFile).mtimeMs < startedAt - 1000) {
  await new Promise((r) => setTimeout(r, 100));
}
for (const s of SERVICES) run(s.name);
logger.info({ services: [SANDBOX.name, ...SERVICES.map((s) => s.name)] }, 'Herald is running; try `npx herald register` and `npx herald send` (Ctrl-C stops)');

const shutdown = (): void => {
  if (stopping) process.exit(1);
  stopping = true;
  logger.info('stopping every service');
  for (const child of children.values()) child.kill('SIGTERM');
  const check = setInterval(() => {
    if (children.size === 0) {
      clearInterval(check);
      process.exit(0);
    }
  }, 100);
};
process.on('SIGINT', shutdown);
process.on('exit', () => {
  for (const child of children.values()) child.kill('SIGKILL');
});
process.on('SIGTERM', shutdown);
