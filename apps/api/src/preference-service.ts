import {
  MAX_LIST_ROWS,
  MuteCreate,
  MuteDelete,
  OptOutChange,
  UserOfApp,
  type MuteList,
  type MuteView,
  type OptOutList,
  type OptOutView,
} from '@herald/contracts';
import type { ApiKeyRow, AppRow, MuteRow, OptOutRow, PreferenceRepository } from '@herald/db';
import { ApiError, fieldError, parseBody } from './api-error.ts';
import { requireApp } from './auth.ts';

export interface PreferenceServiceDeps {
  apps: { get(id: string): Promise<AppRow | undefined> };
  preferences: Pick<PreferenceRepository, 'addOptOut' | 'setOptOut' | 'listOptOuts' | 'setMute' | 'clearMute' | 'listMutes'>;
  now?: () => Date;
}

/**
 * 403 unless the key may act for the app (checked first: another team's app ids are not revealed),
 * 422 if it does not exist. A disabled app's preferences can still be managed: they outlive a ban.
 */
export async function requireKnownApp(deps: Pick<PreferenceServiceDeps, 'apps'>, key: ApiKeyRow, id: string): Promise<void> {
  requireApp(key, id);
  if ((await deps.apps.get(id)) === undefined) throw fieldError(422, 'unknown-app', 'app', `unknown app "${id}"`);
}

const optOutView = (r: OptOutRow): OptOutView => ({ app: r.app, userId: r.userId, category: r.category, createdAt: r.createdAt.toISOString() });
const muteView = (r: MuteRow): MuteView => ({
  app: r.app,
  userId: r.userId,
  objectId: r.objectId,
  until: r.until?.toISOString() ?? null,
  createdAt: r.createdAt.toISOString(),
});

/** POST /v1/opt-outs: the user gets no push of the category from the app; idempotent. */
export async function addOptOut(body: unknown, key: ApiKeyRow, deps: PreferenceServiceDeps): Promise<{ created: boolean; optOut: OptOutView }> {
  const o = parseBody(OptOutChange, body);
  await requireKnownApp(deps, key, o.app);
  const { created, optOut } = await deps.preferences.addOptOut(o.userId, o.category, o.app);
  return { created, optOut: optOutView(optOut) };
}

/** DELETE /v1/opt-outs: opt back in to the app's category (an every-app opt-out is an operator's to remove). */
export async function removeOptOut(body: unknown, key: ApiKeyRow, deps: PreferenceServiceDeps): Promise<{ removed: boolean }> {
  const o = parseBody(OptOutChange, body);
  await requireKnownApp(deps, key, o.app);
  return { removed: await deps.preferences.setOptOut(o.userId, o.category, false, o.app) };
}

/** GET /v1/opt-outs?app=&userId=: the app's opt-outs of the user and those of every app (app null). */
export async function listOptOuts(query: unknown, key: ApiKeyRow, deps: PreferenceServiceDeps): Promise<OptOutList> {
  const q = parseBody(UserOfApp, query);
  await requireKnownApp(deps, key, q.app);
  const rows = await deps.preferences.listOptOuts(q.userId, { app: q.app, limit: MAX_LIST_ROWS + 1 });
  return { optOuts: rows.slice(0, MAX_LIST_ROWS).map(optOutView), truncated: rows.length > MAX_LIST_ROWS };
}

/** POST /v1/mutes: no push about the object from the app until `until` (replaces the app's earlier mute). */
export async function addMute(body: unknown, key: ApiKeyRow, deps: PreferenceServiceDeps): Promise<{ created: boolean; mute: MuteView }> {
  const m = parseBody(MuteCreate, body);
  const until = m.until === undefined || m.until === null ? null : new Date(m.until);
  const now = deps.now?.() ?? new Date();
  if (until !== null && until.getTime() <= now.getTime()) {
    throw new ApiError(400, 'invalid-request', `until: ${m.until ?? ''} is not in the future`, [{ path: 'until', message: 'must be in the future' }]);
  }
  await requireKnownApp(deps, key, m.app);
  const { created, mute } = await deps.preferences.setMute(m.userId, m.objectId, until, m.app);
  return { created, mute: muteView(mute) };
}

/** DELETE /v1/mutes. */
export async function removeMute(body: unknown, key: ApiKeyRow, deps: PreferenceServiceDeps): Promise<{ removed: boolean }> {
  const m = parseBody(MuteDelete, body);
  await requireKnownApp(deps, key, m.app);
  return { removed: await deps.preferences.clearMute(m.userId, m.objectId, m.app) };
}

/** GET /v1/mutes?app=&userId=: mutes in force now, the app's and those of every app. */
export async function listMutes(query: unknown, key: ApiKeyRow, deps: PreferenceServiceDeps): Promise<MuteList> {
  const q = parseBody(UserOfApp, query);
  await requireKnownApp(deps, key, q.app);
  const rows = await deps.preferences.listMutes(q.userId, deps.now?.() ?? new Date(), { app: q.app, limit: MAX_LIST_ROWS + 1 });
  return { mutes: rows.slice(0, MAX_LIST_ROWS).map(muteView), truncated: rows.length > MAX_LIST_ROWS };
}
