import { UserErasureRequest, type UserErasureView } from '@herald/contracts';
import type { ApiKeyRow, UserErasure } from '@herald/db';
import { parseBody } from './api-error.ts';
import { requireKnownApp, type PreferenceServiceDeps } from './preference-service.ts';

export interface UserErasureServiceDeps {
  apps: PreferenceServiceDeps['apps'];
  /** Erase one user of one app (libs/db eraseUser). */
  eraseUser(app: string, userId: string): Promise<UserErasure>;
}

/** The answer: counts, what was kept as not the app's, and a notice for stored pushes not looked through. */
export const userErasureView = (userId: string, e: UserErasure): UserErasureView => ({
  app: e.app,
  userId,
  erasedAt: e.erasedAt.toISOString(),
  removed: { devices: e.devices, topicMemberships: e.topicMemberships, follows: e.follows, optOuts: e.optOuts, mutes: e.mutes, storedPushes: e.storedPushes },
  kept: { everyAppOptOuts: e.keptEveryAppOptOuts, everyAppMutes: e.keptEveryAppMutes },
  notices:
    e.storedPushes === null
      ? [`pushes stored for later could not be looked through now (${e.storedPushesError ?? 'unknown error'}): they are not sent (the devices are unregistered) and go when due; erase again to remove them now`]
      : [],
});

/**
 * POST /v1/users:erase {app, userId}: erase what Herald keeps of one user of an app (a request
 * under GDPR article 17, say): libs/db eraseUser. The user id travels in the body, not the path, so
 * access logs and proxies do not record it. Idempotent: erasing again finds nothing more (and moves
 * the erasure's time on). 403 unless the key may act for the app; 422 for an unknown app.
 */
export async function eraseUserOfApp(body: unknown, key: ApiKeyRow, deps: UserErasureServiceDeps): Promise<UserErasureView> {
  const u = parseBody(UserErasureRequest, body);
  await requireKnownApp(deps, key, u.app);
  return userErasureView(u.userId, await deps.eraseUser(u.app, u.userId));
}
