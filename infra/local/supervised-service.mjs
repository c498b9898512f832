// Preloaded by `npm start`'s supervisor into every service it runs (`node --import <this file>`,
// see supervisor.ts): when the supervisor is gone, however it died (SIGKILL and OOM included),
// the service sends itself SIGTERM, which runs its own graceful shutdown (stop consuming, finish
// in-flight work, close), and exits at the latest HERALD_SUPERVISOR_GRACE_MS later. The
// services' code knows nothing of it; without HERALD_SUPERVISOR_PID it does nothing.
import { watchParent } from './parent-watch.mjs';

const supervisor = Number(process.env['HERALD_SUPERVISOR_PID'] ?? '');
if (Number.isInteger(supervisor) && supervisor > 0) {
  const graceMs = Number(process.env['HERALD_SUPERVISOR_GRACE_MS'] ?? '') || 15_000;
  // Not passed on to anything the service itself starts.
  delete process.env['HERALD_SUPERVISOR_PID'];
  delete process.env['HERALD_SUPERVISOR_GRACE_MS'];
  watchParent(supervisor, () => {
    setTimeout(() => process.exit(1), graceMs).unref();
    process.kill(process.pid, 'SIGTERM');
  });
}
