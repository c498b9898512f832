import { ChangePublish, changeSizeProblem, type ChangeEvent } from '@herald/contracts';
import { ApiError, parseBody } from './api-error.ts';
import { checkResourceType } from './subscription-service.ts';

export interface ChangeServiceDeps {
  /** Resolves once RabbitMQ confirmed the change event (as the client library's publishChange). */
  publishChange(event: ChangeEvent): Promise<unknown>;
  resourceTypes: readonly string[];
  /** WEBHOOK_MAX_CHANGE_BYTES */
  maxChangeBytes: number;
  now?: () => Date;
}

/** POST /v1/changes: validate with the ChangeEvent contract, check the type, publish to push.changes. */
export async function acceptChange(body: unknown, team: string, deps: ChangeServiceDeps): Promise<{ id: string }> {
  const c = parseBody(ChangePublish, body);
  checkResourceType(c.resource.type, 'resource.type', deps.resourceTypes);
  const event: ChangeEvent = { ...c, occurredAt: c.occurredAt ?? (deps.now?.() ?? new Date()).toISOString(), publishedBy: team };
  checkChangeSize(event, deps.maxChangeBytes);
  await deps.publishChange(event);
  return { id: event.id };
}

/** A change over WEBHOOK_MAX_CHANGE_BYTES (its JSON or its diff) is refused 413, naming the larger of its states. */
function checkChangeSize(event: ChangeEvent, maxBytes: number): void {
  const problem = changeSizeProblem(event, maxBytes);
  if (problem !== undefined) throw new ApiError(413, 'change-too-large', problem.message, [{ path: problem.path, message: problem.message }]);
}
