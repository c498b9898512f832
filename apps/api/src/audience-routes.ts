import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { startTopicMemberRemovals, type ApiKeyRow } from '@herald/db';
import type { Logger } from '@herald/logging';
import { applyFollows, changeSubscriptions, createTopic, deleteTopic, getTopic, listTopics, type AudienceServiceDeps } from './audience-service.ts';

type Req = FastifyRequest<{ Params: { id: string } }>;
/** server.ts's wrapper: authenticates the team key, then calls the handler with it. */
type Team = (fn: (req: Req, key: ApiKeyRow, reply: FastifyReply) => Promise<unknown>) => (req: Req, reply: FastifyReply) => Promise<unknown>;

/**
 * Topics, their members and follow edges (issue 20); each scoped to the key's apps. A deleted
 * topic's memberships are removed after the answer, one topic at a time, until the API closes
 * (stopped as the close begins, after one statement at most: the registrars' sweep removes the rest);
 * so are those a create of the topic again found still there (409 topic-being-deleted, Retry-After).
 */
export function registerAudienceRoutes(app: FastifyInstance, team: Team, deps: AudienceServiceDeps & { logger: Logger }): void {
  const nameOf = (req: Req): string => (req.params as unknown as { name: string }).name;
  const memberRemovals = startTopicMemberRemovals((topicApp, name, signal) => deps.audiences.removeDeletedMembers(topicApp, name, signal), deps.logger);
  app.addHook('preClose', async () => memberRemovals.stop());
  app.post('/v1/topics', team(async (req, key, reply) => {
    const answer = await createTopic(req.body, key, { ...deps, memberRemovals });
    if (answer.kind === 'being-deleted') {
      void reply.header('retry-after', String(answer.retryAfterS));
      throw answer.refusal;
    }
    return reply.status(answer.kind === 'created' ? 201 : 200).send(answer.topic);
  }));
  app.get('/v1/topics', team(async (req, key) => listTopics(req.query, key, deps)));
  app.get('/v1/topics/:name', team(async (req, key) => getTopic(nameOf(req), req.query, key, deps)));
  app.delete('/v1/topics/:name', team(async (req, key, reply) => {
    await deleteTopic(nameOf(req), req.query, key, { ...deps, memberRemovals });
    return reply.status(204).send();
  }));
  app.post('/v1/topics/:name/subscriptions', team(async (req, key) => changeSubscriptions(nameOf(req), req.body, key, deps)));
  app.post('/v1/follows', team(async (req, key) => applyFollows(req.body, key, deps)));
}
