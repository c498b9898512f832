import { randomBytes } from 'node:crypto';
import { SubscriptionCreate, callbackUrlProblem, type SubscriptionCreated, type SubscriptionView } from '@herald/contracts';
import type { ApiKeyRow, SubscriptionInsert, SubscriptionRow } from '@herald/db';
import { ApiError, parseBody } from './api-error.ts';

export interface SubscriptionServiceDeps {
  subscriptions: {
    create(s: SubscriptionInsert): Promise<SubscriptionRow>;
    listForTeam(team: string): Promise<SubscriptionRow[]>;
    getForTeam(team: string, id: string): Promise<SubscriptionRow | undefined>;
    deleteForTeam(team: string, id: string): Promise<boolean>;
    enableForTeam(team: string, id: string): Promise<SubscriptionRow | undefined>;
  };
  /** WEBHOOK_RESOURCE_TYPES */
  resourceTypes: readonly string[];
  /** WEBHOOK_ALLOW_HTTP_LOCALHOST */
  allowHttpLocalhost: boolean;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** 422 naming the field unless `type` is one of the configured resource types. */
export function checkResourceType(type: string, path: string, resourceTypes: readonly string[]): void {
  if (resourceTypes.includes(type)) return;
  const message = `unknown resource type "${type}"; known types: ${resourceTypes.join(', ')}`;
  throw new ApiError(422, 'unknown-resource-type', `${path}: ${message}`, [{ path, message }]);
}

export function viewOf(row: SubscriptionRow): SubscriptionView {
  return {
    id: row.id,
    team: row.team,
    callbackUrl: row.callbackUrl,
    resourceType: row.resourceType,
    resourceId: row.resourceId,
    enabled: row.enabled,
    disabledAt: row.disabledAt?.toISOString() ?? null,
    disabledReason: row.disabledReason,
    failingSince: row.failingSince?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
  };
}

/** POST /v1/subscriptions: validate, check the URL and type, store; the secret is returned this once. */
export async function createSubscription(body: unknown, key: ApiKeyRow, deps: SubscriptionServiceDeps): Promise<SubscriptionCreated> {
  const s = parseBody(SubscriptionCreate, body);
  const problem = callbackUrlProblem(s.callbackUrl, { allowHttpLocalhost: deps.allowHttpLocalhost });
  if (problem !== undefined) throw new ApiError(400, 'invalid-request', `callbackUrl: ${problem}`, [{ path: 'callbackUrl', message: problem }]);
  checkResourceType(s.resourceType, 'resourceType', deps.resourceTypes);
  const secret = s.secret ?? `whsec_${randomBytes(32).toString('base64url')}`;
  const row = await deps.subscriptions.create({ team: key.team, callbackUrl: s.callbackUrl, resourceType: s.resourceType, resourceId: s.resourceId, secret });
  return { ...viewOf(row), secret };
}

export async function listSubscriptions(key: ApiKeyRow, deps: SubscriptionServiceDeps): Promise<{ subscriptions: SubscriptionView[] }> {
  return { subscriptions: (await deps.subscriptions.listForTeam(key.team)).map(viewOf) };
}

export async function getSubscription(id: string, key: ApiKeyRow, deps: SubscriptionServiceDeps): Promise<SubscriptionView> {
  const row = UUID.test(id) ? await deps.subscriptions.getForTeam(key.team, id) : undefined;
  if (row === undefined) throw notFound(id);
  return viewOf(row);
}

export async function deleteSubscription(id: string, key: ApiKeyRow, deps: SubscriptionServiceDeps): Promise<void> {
  if (!UUID.test(id) || !(await deps.subscriptions.deleteForTeam(key.team, id))) throw notFound(id);
}

/** POST /v1/subscriptions/:id/enable: after the pusher disabled it (or to clear its failure record). */
export async function enableSubscription(id: string, key: ApiKeyRow, deps: SubscriptionServiceDeps): Promise<SubscriptionView> {
  const row = UUID.test(id) ? await deps.subscriptions.enableForTeam(key.team, id) : undefined;
  if (row === undefined) throw notFound(id);
  return viewOf(row);
}

const notFound = (id: string) => new ApiError(404, 'no-subscription', `no subscription "${id}" for this API key's team`);
