// Seeds a throwaway schema with an audience of N devices (default 1,000,000) and prints the plans
// and timings of one chunk of each audience kind (docs/audience-plans.md):
//   npx tsx tools/bench/src/seed-audience.ts [devices]
// bench:fanout reuses seedAudience (re-exported here) to fill its own schema.
import { randomBytes } from 'node:crypto';
import { parseSegment } from '@herald/contracts';
import { createDatabase, dropSchemaAndClose, explainAudienceChunk, readAudienceChunk, seedAudience, type AudienceSpec, type Database } from '@herald/db';

export { seedAudience, type AudienceSeed } from '@herald/db';

const URL = process.env['HERALD_BENCH_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

const segment = (text: string) => {
  const r = parseSegment(text);
  if (!r.ok) throw new Error(r.message);
  return r.filter;
};

const CASES: Array<{ name: string; audience: AudienceSpec }> = [
  { name: 'topic chunk (1M user members)', audience: { kind: 'topic', topic: 'everyone' } },
  { name: 'followers chunk (1M edges)', audience: { kind: 'followers', of: 'star' } },
  { name: 'followers: most recently active 1,000 (capped index)', audience: { kind: 'followers', of: 'star', mostRecent: 1000 } },
  { name: 'segment chunk (broadcast + segment)', audience: { kind: 'broadcast', segment: segment('platform = "apns" and appVersion >= "5.2" and language = "de" and lastSeen within 30d') } },
  { name: 'selective segment chunk', audience: { kind: 'broadcast', segment: segment('timezone = "Asia/Tokyo" and locale = "fr-FR" and lastSeen within 2d') } },
  { name: 'broadcast chunk', audience: { kind: 'broadcast' } },
];

async function timeWalk(db: Database, audience: AudienceSpec, chunks: number): Promise<{ ms: number; devices: number }> {
  let after: string | null = null;
  let devices = 0;
  const started = performance.now();
  for (let i = 0; i < chunks; i++) {
    const chunk = await readAudienceChunk(db, { app: 'bench', audience, category: 'news', after, limit: 1000, now: new Date() });
    devices += chunk.devices.length;
    after = chunk.next;
    if (after === null) break;
  }
  return { ms: performance.now() - started, devices };
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 1_000_000);
  const schema = `herald_seed_${randomBytes(4).toString('hex')}`;
  const db = createDatabase({ url: URL, schema, poolSize: 2 });
  try {
    await db.migrate();
    await db.apps.upsert({ id: 'bench' });
    const started = performance.now();
    await seedAudience(db, { app: 'bench', devices: n, topic: 'everyone', followee: 'star' });
    process.stdout.write(`seeded ${n} devices, topic members and follow edges in ${((performance.now() - started) / 1000).toFixed(1)} s\n\n`);
    for (const c of CASES) {
      // The first chunk after the start, and one from the middle of the walk (the keyset in use).
      const walk = await timeWalk(db, c.audience, 10);
      const plans = await explainAudienceChunk(db, URL, { app: 'bench', audience: c.audience, category: 'news', after: null, limit: 1000, now: new Date() });
      process.stdout.write(`## ${c.name}\n10 chunks of 1,000: ${walk.devices} devices in ${walk.ms.toFixed(0)} ms\n\n`);
      for (const p of plans) process.stdout.write(`\`\`\`\n${p.plan}\n\`\`\`\n\n`);
    }
  } finally {
    await dropSchemaAndClose(db);
  }
}

if (process.argv[1]?.endsWith('seed-audience.ts') === true) await main();
