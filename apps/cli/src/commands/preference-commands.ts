import { createHash } from 'node:crypto';
import { MAX_LIST_ROWS, MuteCreate, MuteDelete, OptOutChange, UserOfApp } from '@herald/contracts';
import type { Database, UserDevice, UserErasure } from '@herald/db';
import { eraseEveryAppPreferences, eraseUser, listUserDevices } from '@herald/db';
import { maskToken } from '@herald/logging';
import type { Command } from 'commander';
import type { z } from 'zod';
import { printRows } from '../output.ts';
import { requireApp } from './app-check.ts';
import { auditedCli } from './cli-audit.ts';
import { check } from './credential-options.ts';
import { withDatabase } from './with-database.ts';

type Scope = { app?: string; allApps?: boolean };

/** Exactly one of --app A (that app) or --all-apps (every app: an operator's opt-out or mute from everything). */
function scopeOf(o: Scope): string | null {
  if ((o.app !== undefined) === (o.allApps === true)) throw new Error('give exactly one of --app <app> (that app only) or --all-apps (every app)');
  return o.app ?? null;
}

/** Validate with the HTTP API's contract (so the CLI refuses what the API refuses); the app must exist. */
async function scoped(db: Database, schema: z.ZodObject, what: string, app: string | null, fields: object): Promise<void> {
  // --all-apps: no app to validate.
  if (app === null) check(schema.omit({ app: true }), what, fields);
  else check(schema, what, { app, ...fields });
  if (app !== null) await requireApp(db, app);
}

const scopeText = (app: string | null): string => (app === null ? 'every app' : `app ${app}`);
/** The audit log's target for a user's preference: app/user, with "*" for every app. */
const userTarget = (app: string | null, user: string): string => `${app ?? '*'}/${user}`;
const changedSummary = (changed: boolean) => ({ changed });
/** An erasure's audit target: the user id is what is erased, so the audit log keeps a digest of it (enough to match a request's record). */
const erasedTarget = (app: string | null, user: string): string => `${app ?? '*'}/sha256:${createHash('sha256').update(user).digest('hex').slice(0, 16)}`;
const when = (d: Date | null): string => (d === null ? '' : d.toISOString());

const deviceRow = (d: UserDevice, fullTokens: boolean) => ({
  id: d.id,
  platform: d.platform,
  token: fullTokens ? d.token : maskToken(d.token),
  kind: d.tokenKind,
  timezone: d.timezone,
  locale: d.locale,
  registeredAt: when(d.registeredAt),
  invalidSince: when(d.invalidatedAt),
  invalidReason: d.invalidationReason,
});

/** `herald opt-out|mute` (per app, or --all-apps), `herald opt-outs|mutes|devices` (a user's). */
export function registerPreferenceCommands(program: Command): void {
  program
    .command('opt-out')
    .description("opt a user out of (or back into, with --undo) a category of an app's pushes")
    .requiredOption('--user <userId>', 'user id')
    .requiredOption('--category <category>', 'category')
    .option('--app <app>', 'the app whose pushes of the category stop')
    .option('--all-apps', 'every app (also how to remove an opt-out made before opt-outs were per app)')
    .option('--undo', 'opt back in')
    .action(async (o: Scope & { user: string; category: string; undo?: boolean }) => {
      const app = scopeOf(o);
      const audit = { action: o.undo === true ? 'opt-out.remove' : 'opt-out.add', target: userTarget(app, o.user), request: { category: o.category, via: 'cli' } };
      const changed = await auditedCli(
        audit,
        async (db) => {
          await scoped(db, OptOutChange, 'opt-out', app, { userId: o.user, category: o.category });
          return db.preferences.setOptOut(o.user, o.category, o.undo !== true, app);
        },
        changedSummary,
      );
      const what = o.undo === true ? (changed ? 'opted back into' : 'was not opted out of') : changed ? 'opted out of' : 'was already opted out of';
      process.stdout.write(`${o.user} ${what} ${o.category} (${scopeText(app)})\n`);
    });

  program
    .command('mute')
    .description('mute an object (e.g. a thread) of an app for a user, optionally until a time; --undo unmutes')
    .requiredOption('--user <userId>', 'user id')
    .requiredOption('--object <objectId>', 'object id')
    .option('--app <app>', 'the app whose pushes about the object stop')
    .option('--all-apps', 'every app (also how to remove a mute made before mutes were per app)')
    .option('--until <iso>', 'ISO-8601 instant with offset when the mute ends, e.g. 2026-05-01T08:00:00Z')
    .option('--undo', 'unmute')
    .action(async (o: Scope & { user: string; object: string; until?: string; undo?: boolean }) => {
      const app = scopeOf(o);
      if (o.undo === true && o.until !== undefined) throw new Error('--until and --undo do not go together');
      if (o.until !== undefined && Date.parse(o.until) <= Date.now()) throw new Error(`--until ${o.until} is not in the future`);
      const audit = {
        action: o.undo === true ? 'mute.remove' : 'mute.add',
        target: userTarget(app, o.user),
        request: { objectId: o.object, ...(o.until !== undefined && { until: o.until }), via: 'cli' },
      };
      const changed = await auditedCli(
        audit,
        async (db) => {
          if (o.undo === true) {
            await scoped(db, MuteDelete, 'mute', app, { userId: o.user, objectId: o.object });
            return db.preferences.clearMute(o.user, o.object, app);
          }
          await scoped(db, MuteCreate, 'mute', app, { userId: o.user, objectId: o.object, ...(o.until !== undefined && { until: o.until }) });
          await db.preferences.setMute(o.user, o.object, o.until === undefined ? null : new Date(o.until), app);
          return true;
        },
        changedSummary,
      );
      const line = o.undo === true ? (changed ? 'unmuted' : 'had not muted') : 'muted';
      process.stdout.write(`${o.user} ${line} ${o.object} (${scopeText(app)})${o.until === undefined ? '' : ` until ${o.until}`}\n`);
    });

  program
    .command('erase-user')
    .description("erase what Herald keeps of a user of an app (devices unregistered and stripped, topic memberships, follows, opt-outs, mutes, stored pushes); --all-apps: of every app, and the user's every-app opt-outs and mutes")
    .requiredOption('--user <userId>', 'user id')
    .option('--app <app>', 'the app whose user is erased')
    .option('--all-apps', 'every app')
    .option('--json', 'print JSON')
    .action(async (o: Scope & { user: string; json?: boolean }) => {
      const app = scopeOf(o);
      const audit = { action: 'user.erase', target: erasedTarget(app, o.user), request: { via: 'cli' } };
      const result = await auditedCli(
        audit,
        async (db) => {
          if (app !== null) {
            await scoped(db, UserOfApp, 'erase-user', app, { userId: o.user });
            return { erasures: [await eraseUser(db.kysely, app, o.user)], everyApp: undefined };
          }
          check(UserOfApp.omit({ app: true }), 'erase-user', { userId: o.user });
          const erasures: UserErasure[] = [];
          for (const a of await db.apps.list()) erasures.push(await eraseUser(db.kysely, a.id, o.user));
          return { erasures, everyApp: await eraseEveryAppPreferences(db.kysely, o.user) };
        },
        (r) => ({ apps: r.erasures.length, devices: r.erasures.reduce((n, e) => n + e.devices, 0) }),
      );
      const rows = result.erasures.map((e) => ({
        app: e.app,
        devices: e.devices,
        topicMemberships: e.topicMemberships,
        follows: e.follows,
        optOuts: e.optOuts,
        mutes: e.mutes,
        storedPushes: e.storedPushes ?? `not looked through: ${e.storedPushesError ?? ''}`,
      }));
      if (result.everyApp !== undefined) rows.push({ app: '(every app)', devices: 0, topicMemberships: 0, follows: 0, optOuts: result.everyApp.optOuts, mutes: result.everyApp.mutes, storedPushes: 0 });
      printRows(rows, o.json === true);
      const kept = result.everyApp === undefined ? result.erasures[0] : undefined;
      if (kept !== undefined && kept.keptEveryAppOptOuts + kept.keptEveryAppMutes > 0) {
        process.stderr.write(`kept: ${kept.keptEveryAppOptOuts} opt-outs and ${kept.keptEveryAppMutes} mutes of every app (erase-user --all-apps removes them)\n`);
      }
    });

  program
    .command('opt-outs')
    .description("a user's opt-outs (of one app and of every app with --app; app empty: every app)")
    .requiredOption('--user <userId>', 'user id')
    .option('--app <app>', 'only those that apply to this app')
    .option('--json', 'print JSON')
    .action(async (o: { user: string; app?: string; json?: boolean }) => {
      const rows = await withDatabase(async (db) => {
        if (o.app !== undefined) await scoped(db, UserOfApp, 'opt-outs', o.app, { userId: o.user });
        return db.preferences.listOptOuts(o.user, { ...(o.app !== undefined && { app: o.app }), limit: MAX_LIST_ROWS });
      });
      printRows(rows.map((r) => ({ app: r.app, category: r.category, createdAt: when(r.createdAt) })), o.json === true);
    });

  program
    .command('mutes')
    .description("a user's mutes in force (of one app and of every app with --app; app empty: every app)")
    .requiredOption('--user <userId>', 'user id')
    .option('--app <app>', 'only those that apply to this app')
    .option('--json', 'print JSON')
    .action(async (o: { user: string; app?: string; json?: boolean }) => {
      const rows = await withDatabase(async (db) => {
        if (o.app !== undefined) await scoped(db, UserOfApp, 'mutes', o.app, { userId: o.user });
        return db.preferences.listMutes(o.user, new Date(), { ...(o.app !== undefined && { app: o.app }), limit: MAX_LIST_ROWS });
      });
      printRows(rows.map((r) => ({ app: r.app, object: r.objectId, until: when(r.until), createdAt: when(r.createdAt) })), o.json === true);
    });

  program
    .command('devices')
    .description("a user's devices of an app, valid and invalidated (tokens masked unless --full-tokens)")
    .requiredOption('--app <app>', 'app id')
    .requiredOption('--user <userId>', 'user id')
    .option('--full-tokens', 'print whole device tokens (an operator with database access could read them anyway)')
    .option('--json', 'print JSON')
    .action(async (o: { app: string; user: string; fullTokens?: boolean; json?: boolean }) => {
      const rows = await withDatabase(async (db) => {
        await scoped(db, UserOfApp, 'devices', o.app, { userId: o.user });
        return listUserDevices(db.kysely, o.app, o.user, MAX_LIST_ROWS);
      });
      printRows(rows.map((d) => deviceRow(d, o.fullTokens === true)), o.json === true);
    });
}
