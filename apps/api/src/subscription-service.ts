import { randomBytes } from 'node:crypto';
import { SubscriptionCreate, SubscriptionListQuery, SubscriptionSecretRotate, callbackUrlProblem, type SubscriptionCreated, type SubscriptionList, type SubscriptionView } from '@herald/contracts';
import type { ApiKeyRow, SubscriptionInsert, SubscriptionPage, SubscriptionRow } from '@herald/db';
import { ApiError, parseBody } from './api-error.ts';

export interface SubscriptionServiceDeps {
  subscriptions: {
    createWithin(s: SubscriptionInsert, maxPerTeam: number): Promise<SubscriptionRow | 'team-limit' | { existing: string }>;
    listForTeam(team: string, page: SubscriptionPage): Promise<SubscriptionRow[]>;
    getForTeam(team: string, id: string): Promise<SubscriptionRow | undefined>;
    deleteForTeam(team: string, id: string): Promise<boolean>;
    enableForTeam(team: string, id: string): Promise<SubscriptionRow | undefined>;
    rotateSecretForTeam(team: string, id: string, secret: string, keepPreviousUntil: Date | undefined): Promise<SubscriptionRow | undefined>;
  };
  /** WEBHOOK_RESOURCE_TYPES */
  resourceTypes: readonly string[];
  /** WEBHOOK_ALLOW_HTTP_LOCALHOST */
  allowHttpLocalhost: boolean;
  /** WEBHOOK_MAX_SUBSCRIPTIONS_PER_TEAM */
  maxSubscriptionsPerTeam: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** 422 naming the field unless `type` is one of the configured resource types. */
export function checkResourceType(type: string, path: string, resourceTypes: readonly string[]): void {
  if (resourceTypes.includes(type)) return;
  const message = `unknown resource type "${type}"; known types: ${resourceTypes.join(', ')}`;
  throw new ApiError(422, 'unknown-resource-type', `${path}: ${message}`, [{ path, message }]);
}

export function viewOf(row: SubscriptionRow, now = new Date()): SubscriptionView {
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
    previousSecretExpiresAt: row.previousSecret !== null && row.previousSecret.until > now ? row.previousSecret.until.toISOString() : null,
    createdAt: row.createdAt.toISOString(),
  };
}

/**
 * POST /v1/subscriptions: validate, check the URL and type, store; the secret is returned this once.
 * 409 subscription-limit when the team already has WEBHOOK_MAX_SUBSCRIPTIONS_PER_TEAM: one key
 * creating in a loop must not grow the team's list, and every change's fan-out, without bound;
 * 409 subscription-exists when it has one of the same callback URL and resource.
 */
export async function createSubscription(body: unknown, key: ApiKeyRow, deps: SubscriptionServiceDeps): Promise<SubscriptionCreated> {
  const s = parseBody(SubscriptionCreate, body);
  const problem = callbackUrlProblem(s.callbackUrl, { allowHttpLocalhost: deps.allowHttpLocalhost });
  if (problem !== undefined) throw new ApiError(400, 'invalid-request', `callbackUrl: ${problem}`, [{ path: 'callbackUrl', message: problem }]);
  checkResourceType(s.resourceType, 'resourceType', deps.resourceTypes);
  const secret = s.secret ?? newSecret();
  const max = deps.maxSubscriptionsPerTeam;
  const row = await deps.subscriptions.createWithin({ team: key.team, callbackUrl: s.callbackUrl, resourceType: s.resourceType, resourceId: s.resourceId, secret }, max);
  if (row === 'team-limit') {
    throw new ApiError(409, 'subscription-limit', `team "${key.team}" has ${max} subscriptions, the most allowed (WEBHOOK_MAX_SUBSCRIPTIONS_PER_TEAM); delete one first`);
  }
  if ('existing' in row) {
    throw new ApiError(
      409,
      'subscription-exists',
      `subscription ${row.existing} already sends ${s.resourceType}/${s.resourceId} to this callbackUrl: a copy would deliver each change twice (rotate its secret with POST /v1/subscriptions/${row.existing}/rotate-secret)`,
    );
  }
  return { ...viewOf(row), secret };
}

/** GET /v1/subscriptions?limit=&after=: a page of the team's subscriptions in id order; `next` is the following page's `after`. */
export async function listSubscriptions(query: unknown, key: ApiKeyRow, deps: SubscriptionServiceDeps): Promise<SubscriptionList> {
  const page = parseBody(SubscriptionListQuery, query ?? {});
  const rows = await deps.subscriptions.listForTeam(key.team, { limit: page.limit + 1, ...(page.after !== undefined && { after: page.after }) });
  const shown = rows.slice(0, page.limit);
  return { subscriptions: shown.map((row) => viewOf(row)), next: rows.length > page.limit ? (shown[shown.length - 1]?.id ?? null) : null };
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

/**
 * POST /v1/subscriptions/:id/rotate-secret: a new secret (given, or generated), returned this once;
 * deliveries carry a signature by the current one too for keepPreviousForS (a receiver switches to
 * the new one within it; 0 drops the current one at once, stored no more). Rotated again within
 * that window (a retry whose answer was lost), the secret from before the first rotation keeps
 * signing and only the new one is replaced. The pushers pick it up within
 * WEBHOOK_SUBSCRIPTION_CACHE_TTL_MS; each delivery keeps its notification id, so a receiver's
 * de-duplication holds across the rotation.
 */
export async function rotateSubscriptionSecret(id: string, body: unknown, key: ApiKeyRow, deps: SubscriptionServiceDeps): Promise<SubscriptionCreated> {
  const r = parseBody(SubscriptionSecretRotate, body ?? {});
  const secret = r.secret ?? newSecret();
  const keepUntil = r.keepPreviousForS === 0 ? undefined : new Date(Date.now() + r.keepPreviousForS * 1000);
  const row = UUID.test(id) ? await deps.subscriptions.rotateSecretForTeam(key.team, id, secret, keepUntil) : undefined;
  if (row === undefined) throw notFound(id);
  return { ...viewOf(row), secret };
}

const newSecret = (): string => `whsec_${randomBytes(32).toString('base64url')}`;

const notFound = (id: string) => new ApiError(404, 'no-subscription', `no subscription "${id}" for this API key's team`);
