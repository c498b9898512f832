import { ChangePublish, type ChangeEvent } from '@herald/contracts';
import { parseBody } from './api-error.ts';
import { checkResourceType } from './subscription-service.ts';

export interface ChangeServiceDeps {
  /** Resolves once RabbitMQ confirmed the change event (as the client library's publishChange). */
  publishChange(event: ChangeEvent): Promise<unknown>;
  resourceTypes: readonly string[];
  now?: () => Date;
}

/** POST /v1/changes: validate with the ChangeEvent contract, check the type, publish to push.changes. */
export async function acceptChange(body: unknown, team: string, deps: ChangeServiceDeps): Promise<{ id: string }> {
  const c = parseBody(ChangePublish, body);
  checkResourceType(c.resource.type, 'resource.type', deps.resourceTypes);
  const event: ChangeEvent = { ...c, occurredAt: c.occurredAt ?? (deps.now?.() ?? new Date()).toISOString(), publishedBy: team };
  await deps.publishChange(event);
  return { id: event.id };
}
