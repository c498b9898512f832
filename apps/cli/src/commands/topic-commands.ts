import { MAX_TOPIC_BATCH, MAX_TOPIC_LIST, Platforms, TopicName, TopicNameCharacters, TopicSubscriptions, type Platform } from '@herald/contracts';
import { createAudienceStore, createTopic, removeDeletedMembers, type Database } from '@herald/db';
import { maskToken } from '@herald/logging';
import type { Command } from 'commander';
import { printObject, printRows } from '../output.ts';
import { requireApp } from './app-check.ts';
import { auditedCli } from './cli-audit.ts';
import { check } from './credential-options.ts';
import { withDatabase } from './with-database.ts';

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** `--device platform:token` (the token may itself contain ':', e.g. a Web Push endpoint). */
export function parseDeviceOption(text: string): { platform: Platform; token: string } {
  const at = text.indexOf(':');
  const platform = text.slice(0, Math.max(at, 0));
  if (at < 1 || !(Platforms as readonly string[]).includes(platform)) throw new Error(`--device ${text}: expected platform:token with platform one of ${Platforms.join(', ')}`);
  return { platform: platform as Platform, token: text.slice(at + 1) };
}

/** A topic name to create or subscribe to: not dots only (TopicName). */
async function topicOf(db: Database, app: string, name: string): Promise<string> {
  check(TopicName, 'topic', name);
  await requireApp(db, app);
  return name;
}

/**
 * A topic name to show or delete: any an existing topic may have, "." and ".." too (created before
 * such names were refused). Most HTTP clients collapse the path segments "." and ".." (fetch and
 * browsers even encoded), so the API is seldom asked for those: the CLI is how an operator reaches them.
 */
async function existingTopicOf(db: Database, app: string, name: string): Promise<string> {
  check(TopicNameCharacters, 'topic', name);
  await requireApp(db, app);
  return name;
}

type Membership = { app: string; user?: string[]; device?: string[]; at?: string; json?: boolean };

/** The audit log's target for a topic: app/topic (neither may contain "/"). */
const topicTarget = (app: string, topic: string): string => `${app}/${topic}`;

async function changeMembership(topic: string, o: Membership, subscribed: boolean): Promise<void> {
  const body = check(TopicSubscriptions, 'subscriptions', {
    subscribed,
    eventAt: o.at ?? new Date().toISOString(),
    ...(o.user !== undefined && { users: o.user }),
    ...(o.device !== undefined && { devices: o.device.map(parseDeviceOption) }),
  });
  const what = {
    action: subscribed ? 'topic.subscribe' : 'topic.unsubscribe',
    target: topicTarget(o.app, topic),
    // Device tokens masked as in the logs: the audit log keeps who was changed, not a way to reach them.
    request: { users: body.users ?? [], devices: (body.devices ?? []).map((d) => `${d.platform}:${maskToken(d.token)}`), eventAt: body.eventAt, via: 'cli' },
  };
  const result = await auditedCli(what, async (db) => {
    await topicOf(db, o.app, topic);
    const store = createAudienceStore(db.kysely);
    if ((await store.findTopic(o.app, topic)) === undefined) throw new Error(`unknown topic "${topic}" of app "${o.app}"`);
    const members = [...(body.users ?? []).map((userId) => ({ userId })), ...(body.devices ?? [])];
    const results = await store.applyTopicMemberships(members.map((member) => ({ app: o.app, topic, member, subscribed, eventAt: body.eventAt ?? '' })));
    return { applied: results.filter((r) => r === 'applied').length, stale: results.filter((r) => r === 'stale').length, subscribers: (await store.findTopic(o.app, topic))?.subscribers ?? 0 };
  });
  printObject(result);
}

/** How often `topics delete` and `topics create` say how many memberships they have removed so far. */
const REMOVAL_PROGRESS_MS = 5_000;

/**
 * The member rows of the deleted topic (or those a deletion of a topic of that name left), removed
 * here, a batch at a time, waiting for rows another removal holds: a topic of millions takes
 * minutes, said on stderr as it goes. An interrupt stops it (each statement is whole, done or not);
 * the registrars' sweep removes the rest.
 */
async function removeMembers(app: string, topic: string): Promise<number> {
  let removed = 0;
  let saidAt = performance.now();
  return withDatabase((db) =>
    removeDeletedMembers(db.kysely, app, topic, {
      onBatch: (n) => {
        removed += n;
        if (performance.now() - saidAt < REMOVAL_PROGRESS_MS) return;
        saidAt = performance.now();
        process.stderr.write(`${removed} memberships removed so far (an interrupt leaves the rest to the registrars' sweep)\n`);
      },
    }),
  );
}

/** `herald topics create|delete|list|show|subscribe|unsubscribe` (issue 20). */
export function registerTopicCommands(program: Command): void {
  const topics = program.command('topics').description("an app's topics and their members (users or single devices)");
  topics
    .command('create <topic>')
    .description(
      'create a topic (idempotent); the memberships left of a topic of that name deleted before are removed first, however many ' +
        '(the new topic must not take them), saying how many as it goes',
    )
    .requiredOption('--app <app>', 'the app')
    .action(async (name: string, o: { app: string }) => {
      check(TopicName, 'topic', name);
      // Here, not in the create's bounded removal (the API's, which refuses while rows remain): an
      // operator can wait, and is told how it goes, as by `topics delete`.
      const removed = await removeMembers(o.app, name);
      if (removed > 0) process.stdout.write(`${removed} memberships left by an earlier deletion of topic ${name} of ${o.app} removed\n`);
      const what = { action: 'topic.create', target: topicTarget(o.app, name), request: { via: 'cli' } };
      const created = await auditedCli(what, async (db) => createTopic(db.kysely, o.app, await topicOf(db, o.app, name)), (r) => ({ created: r.created }));
      process.stdout.write(`topic ${name} of ${o.app} ${created.created ? 'created' : 'existed already'}\n`);
    });
  topics
    .command('delete <topic>')
    .description(
      'delete a topic, also one named "." or ".." (most HTTP clients cannot ask the API for those); then remove its memberships ' +
        "(an interrupt leaves them to the registrars' sweep), or those an earlier deletion of it left",
    )
    .requiredOption('--app <app>', 'the app')
    .action(async (name: string, o: { app: string }) => {
      const what = { action: 'topic.delete', target: topicTarget(o.app, name), request: { via: 'cli' } };
      const deleted = await auditedCli(what, async (db) => createAudienceStore(db.kysely).deleteTopic(o.app, await existingTopicOf(db, o.app, name)), (r) => ({ deleted: r }));
      // Said as soon as the topic is gone, as the API answers: its members get nothing from it from here on.
      if (deleted) process.stdout.write(`topic ${name} of ${o.app} deleted\n`);
      const removed = await removeMembers(o.app, name);
      if (deleted) {
        if (removed > 0) process.stdout.write(`${removed} memberships removed\n`);
      } else if (removed > 0) {
        // Deleted before (its removal cut short, or still under way): what this did is said, not refused.
        process.stdout.write(`no topic ${name} of app ${o.app}; ${removed} leftover memberships of its deletion removed\n`);
      } else {
        throw new Error(`unknown topic "${name}" of app "${o.app}"`);
      }
    });
  topics
    .command('list')
    .description(`the app's topics with their subscriber counts, by name, ${MAX_TOPIC_LIST} at a time`)
    .requiredOption('--app <app>', 'the app')
    .option('--after <topic>', "the page after this topic (the last one's listed)")
    .option('--json', 'JSON output')
    .action(async (o: { app: string; after?: string; json?: boolean }) => {
      const after = o.after === undefined ? undefined : check(TopicNameCharacters, '--after', o.after);
      // One more than a page, as GET /v1/topics reads it: a page that stopped at the limit said nothing of the rest.
      const rows = await withDatabase(async (db) => {
        await requireApp(db, o.app);
        return createAudienceStore(db.kysely).listTopics(o.app, MAX_TOPIC_LIST + 1, after);
      });
      const page = rows.slice(0, MAX_TOPIC_LIST);
      printRows(page.map((t) => ({ name: t.name, subscribers: t.subscribers, createdAt: t.createdAt.toISOString() })), o.json === true);
      const last = page[page.length - 1];
      if (rows.length > MAX_TOPIC_LIST && last !== undefined) process.stderr.write(`more: herald topics list --app ${o.app} --after ${last.name}\n`);
    });
  topics
    .command('show <topic>')
    .description('a topic and its subscriber count')
    .requiredOption('--app <app>', 'the app')
    .option('--json', 'JSON output')
    .action(async (name: string, o: { app: string; json?: boolean }) => {
      const topic = await withDatabase(async (db) => createAudienceStore(db.kysely).findTopic(o.app, await existingTopicOf(db, o.app, name)));
      if (topic === undefined) throw new Error(`unknown topic "${name}" of app "${o.app}"`);
      printObject({ app: topic.app, name: topic.name, subscribers: topic.subscribers, createdAt: topic.createdAt.toISOString() });
    });
  for (const [verb, subscribed] of [['subscribe', true], ['unsubscribe', false]] as const) {
    topics
      .command(`${verb} <topic>`)
      .description(`${verb} users and devices (at most ${MAX_TOPIC_BATCH}); the last event per member wins`)
      .requiredOption('--app <app>', 'the app')
      .option('--user <userId>', 'a user (repeatable)', collect)
      .option('--device <platform:token>', 'a single device (repeatable)', collect)
      .option('--at <iso-time>', 'the event time (default: now)')
      .option('--json', 'JSON output')
      .action(async (topic: string, o: Membership) => changeMembership(topic, o, subscribed));
  }
}
