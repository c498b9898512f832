import { randomUUID } from 'node:crypto';
import { createDatabase } from '@herald/db';
import { createLogger } from '@herald/logging';
import { createTestDatabase, startTcpProxyFor, type TcpProxy, type TestDatabase } from '@herald/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completeDurably } from './ledger-record.ts';
import { ledgerTimeoutOf } from './run-pusher.ts';

const logger = createLogger({ service: 'ledger-record-spec', level: 'silent', format: 'json' });
const LEASE_MS = 6_000;
let t: TestDatabase;
let proxy: TcpProxy;
beforeAll(async () => {
  t = await createTestDatabase('ledger_record');
  proxy = await startTcpProxyFor(t.url);
});
afterAll(async () => {
  await proxy?.close();
  await t?.drop();
});

describe('recording sent pushes when the primary is lost without a word', () => {
  it('records them on a new connection within the lease, so no other pusher may claim and send them again', async () => {
    // As a pusher opens its database (run-pusher.ts): the service's bound far above the ledger's.
    const db = createDatabase({ url: proxy.urlFor(t.url), schema: t.schema, poolSize: 4, queryTimeoutMs: 60_000, ledgerTimeoutMs: ledgerTimeoutOf(LEASE_MS) });
    try {
      const pushIds = [randomUUID(), randomUUID(), randomUUID()];
      await db.ledger.claim(pushIds, 'pusher-a', LEASE_MS);
      const claimedAt = Date.now();
      // Three connections open (and idle) when the host goes silent: each would hold a try for a full bound.
      await Promise.all([1, 2, 3].map(() => db.ledger.doneOf(pushIds)));
      proxy.stall();
      // The provider accepted them; the mark's first attempt goes to the silent connection, and closes
      // the other two with it: the second goes to a new one (without that, four attempts, 1 s each).
      let attempts = 0;
      const counted = { complete: (entries: Parameters<typeof db.ledger.complete>[0]) => (attempts++, db.ledger.complete(entries)) };
      await completeDurably(counted, pushIds.map((pushId) => ({ pushId, outcome: 'delivered' })), logger);
      expect(attempts).toBe(2);
      expect(Date.now() - claimedAt).toBeLessThan(LEASE_MS);
      const again = await t.db.ledger.claim(pushIds, 'pusher-b', 1);
      expect([...again.values()]).toEqual(['done', 'done', 'done']);
    } finally {
      await db.close();
    }
  });
});
