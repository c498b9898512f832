import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { audited, type AuditActor } from '@herald/db';
import type { Logger } from '@herald/logging';
import { createAdminAuthenticator } from './admin-auth.ts';
import { authenticateFirst } from './authenticate-first.ts';
import {
  createApp,
  createKey,
  createOperatorKey,
  listApps,
  rotateApp,
  setEnabled,
  updateApp,
  type AdminDeps,
} from './admin-service.ts';
import { generateVapid, getWebPush, rotateVapid, updateWebPush, type WebPushServiceDeps } from './web-push-service.ts';

export interface AdminRouteDeps extends WebPushServiceDeps {
  admin: AdminDeps;
  adminKey: string | undefined;
  keyCacheTtlMs: number;
  logger: Logger;
}

type Req = FastifyRequest<{ Params: { id: string } }>;

/** Names of the fields a request set, never their values (credentials are secrets). */
const fieldsOf = (body: unknown): string[] => (typeof body === 'object' && body !== null ? Object.keys(body).sort() : []);
const str = (body: unknown, field: string): string => {
  const v = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[field] : undefined;
  return typeof v === 'string' ? v : '(invalid)';
};
/** What the audit log keeps of an app after a change. */
const appSummary = (a: { id: string; enabled: boolean; credentialsVersion: number }) => ({
  id: a.id,
  enabled: a.enabled,
  credentialsVersion: a.credentialsVersion,
});

/**
 * /admin routes: apps as data, team keys and operator keys. Each needs an operator key or the
 * bootstrap HERALD_ADMIN_KEY; each write is recorded in the audit log (who, what, when, the
 * fields set, the result without secrets) before it runs and finished after.
 */
export function adminRoutes(app: FastifyInstance, deps: AdminRouteDeps): void {
  // Checked before the body is read: a request without an operator key is answered 401 at once.
  const authenticate = authenticateFirst(app, '/admin/', createAdminAuthenticator(deps.admin.keys, deps.adminKey, deps.keyCacheTtlMs));
  const d = deps.admin;
  const read = (fn: () => Promise<unknown>) => async (req: Req) => {
    await authenticate(req);
    return fn();
  };
  /** An audited write: `run` returns the answer, `summary` what the log keeps of it. */
  const write =
    <T>(
      action: string,
      target: (req: Req) => string,
      run: (req: Req) => Promise<T>,
      summary: (result: T) => unknown,
      status = 200,
    ) =>
    async (req: Req, reply: FastifyReply) => {
      const actor: AuditActor = await authenticate(req);
      let answer: T | undefined;
      await audited(
        d.audit,
        deps.logger,
        actor,
        { action, target: target(req), request: { fields: fieldsOf(req.body) } },
        async () => {
          answer = await run(req);
          return summary(answer);
        },
      );
      return reply.status(status).send(answer);
    };
  const byId = (req: Req) => req.params.id;
  app.get(
    '/admin/apps',
    read(() => listApps(d)),
  );
  app.post(
    '/admin/apps',
    write(
      'app.create',
      (req) => str(req.body, 'id'),
      (req) => createApp(req.body, d),
      appSummary,
      201,
    ),
  );
  app.patch(
    '/admin/apps/:id',
    write('app.update', byId, (req) => updateApp(req.params.id, req.body, d), appSummary),
  );
  app.post(
    '/admin/apps/:id/disable',
    write('app.disable', byId, (req) => setEnabled(req.params.id, false, d), appSummary),
  );
  app.post(
    '/admin/apps/:id/enable',
    write('app.enable', byId, (req) => setEnabled(req.params.id, true, d), appSummary),
  );
  app.put(
    '/admin/apps/:id/credentials',
    write('app.rotate-credentials', byId, (req) => rotateApp(req.params.id, req.body, d), appSummary),
  );
  // Web Push (ADR 0014): VAPID keys (the audit log keeps the public key, never the private one) and the host allow-list.
  const webSummary = (w: { app: string; vapid: { publicKey: string } | null; credentialsVersion: number }) => ({
    id: w.app,
    vapidPublicKey: w.vapid?.publicKey ?? null,
    credentialsVersion: w.credentialsVersion,
  });
  app.get('/admin/apps/:id/web-push', async (req: Req) => {
    await authenticate(req);
    return getWebPush(req.params.id, deps);
  });
  app.patch('/admin/apps/:id/web-push', write('app.update-web-push', byId, (req) => updateWebPush(req.params.id, req.body, d), webSummary));
  app.post('/admin/apps/:id/vapid', write('app.generate-vapid', byId, (req) => generateVapid(req.params.id, req.body, d), webSummary, 201));
  app.post('/admin/apps/:id/vapid/rotate', write('app.rotate-vapid', byId, (req) => rotateVapid(req.params.id, req.body, d), webSummary));
  app.post(
    '/admin/keys',
    write(
      'key.create',
      (req) => `team:${str(req.body, 'team')}`,
      (req) => createKey(req.body, d),
      (k) => ({ id: k.id, team: k.team, apps: k.apps }),
      201,
    ),
  );
  app.post(
    '/admin/operator-keys',
    write(
      'operator-key.create',
      (req) => `operator:${str(req.body, 'name')}`,
      (req) => createOperatorKey(req.body, d),
      (k) => ({ id: k.id, name: k.name }),
      201,
    ),
  );
}
