import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKeyRow } from '@herald/db';
import { addMute, addOptOut, listMutes, listOptOuts, removeMute, removeOptOut, type PreferenceServiceDeps } from './preference-service.ts';
import { listUserDevices, type UserDevicesServiceDeps } from './user-devices-service.ts';
import { eraseUserOfApp, type UserErasureServiceDeps } from './user-erasure-service.ts';

type Req = FastifyRequest<{ Params: { id: string } }>;
/** server.ts's wrapper: authenticates the team key, then calls the handler with it. */
type Team = (fn: (req: Req, key: ApiKeyRow, reply: FastifyReply) => Promise<unknown>) => (req: Req, reply: FastifyReply) => Promise<unknown>;

/** Opt-outs, mutes, a user's devices and a user's erasure, per app (issue 17); each scoped to the key's apps. */
export function registerPreferenceRoutes(app: FastifyInstance, team: Team, deps: PreferenceServiceDeps & UserDevicesServiceDeps & UserErasureServiceDeps): void {
  app.post('/v1/opt-outs', team(async (req, key, reply) => {
    const { created, optOut } = await addOptOut(req.body, key, deps);
    return reply.status(created ? 201 : 200).send(optOut);
  }));
  app.delete('/v1/opt-outs', team(async (req, key) => removeOptOut(req.body, key, deps)));
  app.get('/v1/opt-outs', team(async (req, key) => listOptOuts(req.query, key, deps)));
  app.post('/v1/mutes', team(async (req, key, reply) => {
    const { created, mute } = await addMute(req.body, key, deps);
    return reply.status(created ? 201 : 200).send(mute);
  }));
  app.delete('/v1/mutes', team(async (req, key) => removeMute(req.body, key, deps)));
  app.get('/v1/mutes', team(async (req, key) => listMutes(req.query, key, deps)));
  app.get('/v1/devices', team(async (req, key) => listUserDevices(req.query, key, deps)));
  app.post('/v1/users::erase', team(async (req, key) => eraseUserOfApp(req.body, key, deps)));
}
