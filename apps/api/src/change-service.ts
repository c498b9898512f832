import { ChangePublish, type ChangeEvent } from '@herald/contracts';
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

/** JSON bytes of a value (as it is published). */
const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? '');

/**
 * A change over WEBHOOK_MAX_CHANGE_BYTES is refused 413, naming the larger of its states: each of
 * its notifications carries its diff, and the fan-out and the pusher hold hundreds of them at once.
 */
function checkChangeSize(event: ChangeEvent, maxBytes: number): void {
  const bytes = jsonBytes(event);
  if (bytes <= maxBytes) return;
  const [oldBytes, newBytes] = [jsonBytes(event.old), jsonBytes(event.new)];
  const path = newBytes >= oldBytes ? 'new' : 'old';
  const message = `the change event is ${bytes} bytes of JSON, over the limit of ${maxBytes} (WEBHOOK_MAX_CHANGE_BYTES): old ${oldBytes}, new ${newBytes} bytes; send the fields receivers act on, not whole documents`;
  throw new ApiError(413, 'change-too-large', message, [{ path, message: `${path === 'new' ? newBytes : oldBytes} bytes of the change's ${bytes}` }]);
}
