import { FollowEvents } from '@herald/contracts';
import { createAudienceStore } from '@herald/db';
import type { Command } from 'commander';
import { requireApp } from './app-check.ts';
import { auditedCli } from './cli-audit.ts';
import { check } from './credential-options.ts';

type Edge = { app: string; follower: string; followee: string; at?: string };

/** `herald follows add|remove`: "follower follows followee" edges (issue 20); the last event per edge wins. */
export function registerFollowCommands(program: Command): void {
  const follows = program.command('follows').description('follow edges: who follows whom (the followers audience)');
  for (const [verb, following] of [['add', true], ['remove', false]] as const) {
    follows
      .command(verb)
      .description(following ? 'the follower follows the followee' : 'the follower unfollowed the followee')
      .requiredOption('--app <app>', 'the app')
      .requiredOption('--follower <userId>', 'who follows')
      .requiredOption('--followee <userId>', 'who is followed')
      .option('--at <iso-time>', 'the event time (default: now)')
      .action(async (o: Edge) => {
        const body = check(FollowEvents, 'follow event', { events: [{ follower: o.follower, followee: o.followee, following, eventAt: o.at ?? new Date().toISOString() }] });
        const what = { action: following ? 'follow.add' : 'follow.remove', target: `${o.app}/${o.follower}`, request: { followee: o.followee, eventAt: body.events[0]?.eventAt, via: 'cli' } };
        const [result] = await auditedCli(
          what,
          async (db) => {
            await requireApp(db, o.app);
            return createAudienceStore(db.kysely).applyFollowEvents(body.events.map((e) => ({ app: o.app, ...e })));
          },
          ([r]) => ({ result: r ?? 'stale' }),
        );
        process.stdout.write(`${o.follower} ${following ? 'follows' : 'unfollowed'} ${o.followee} (${o.app}): ${result ?? 'stale'}\n`);
      });
  }
}
