// The container image's entry point (Dockerfile): one image, the command chooses what runs.
//   docker run herald <service>      one service's esbuild bundle (dist/services/<service>/main.mjs)
//   docker run herald prepare        apply the RabbitMQ topology and the database migrations, then exit
//   docker run herald herald <args>  the operator CLI (npx herald …)
//   docker run herald help           this list
// Plain JavaScript: it runs on plain Node; prepare and the CLI go through tsx like `npx herald`.
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bundles = join(root, 'dist', 'services');
const services = existsSync(bundles)
  ? readdirSync(bundles)
      .filter((name) => existsSync(join(bundles, name, 'main.mjs')))
      .sort()
  : [];
const [command = 'help', ...args] = process.argv.slice(2);

if (services.includes(command)) {
  await import(pathToFileURL(join(bundles, command, 'main.mjs')).href);
} else if (command === 'prepare' || command === 'herald') {
  const { register } = await import('tsx/esm/api');
  register();
  process.argv = [process.argv[0] ?? 'node', command, ...args];
  await import(pathToFileURL(join(root, command === 'prepare' ? 'infra/container/prepare.ts' : 'apps/cli/src/main.ts')).href);
} else {
  const known = command === 'help' || command === '--help';
  (known ? console.log : console.error)(
    `${known ? '' : `unknown command "${command}". `}Usage: docker run herald <command>, one of:\n` +
      `  ${services.join(', ')}: run that service\n` +
      '  prepare: apply the RabbitMQ topology and the database migrations, then exit\n' +
      '  herald <args>: the operator CLI, e.g. herald status',
  );
  process.exit(known ? 0 : 2);
}
