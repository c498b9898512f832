import { createProviderLaneStore, readDownLanes, type DownLane, type ProviderLaneStore } from '@herald/db';
import { createLogger } from '@herald/logging';
import type { SendResult } from '@herald/providers';
import { createTestDatabase, waitFor, type TestDatabase } from '@herald/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { recordLaneState, type LaneStateRecorder } from './lane-state-recorder.ts';
import { ProviderLanes } from './provider-lanes.ts';

const logger = createLogger({ service: 'lane-state-spec', level: 'silent', format: 'json' });
const outage: SendResult = { kind: 'transient', reason: 'transport: connect ECONNREFUSED', outage: true };
const delivered: SendResult = { kind: 'delivered' };
const LANE = 'apns (shared connection)';
const PROBE_MS = 150;

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase('lanestate');
});
afterAll(() => t.drop());

let started: Array<{ lanes: ProviderLanes; recorder: LaneStateRecorder }> = [];
afterEach(async () => {
  for (const s of started) {
    await s.recorder.stop();
    s.lanes.close();
  }
  started = [];
});

/** A pusher's lanes and their record, the writes counted. */
function pusher(
  instance: string,
  refreshMs: number,
  { quietMs = 60_000, failing = () => false, retryMs = 100, retryMaxMs = 400 }: { quietMs?: number; failing?: () => boolean; retryMs?: number; retryMaxMs?: number } = {},
): { lanes: ProviderLanes; writes: () => number } {
  const lanes = new ProviderLanes({ holdMs: 60_000, probeMs: PROBE_MS, minSends: 5, afterMs: 0, quietMs }, 'apns', logger);
  const store = createProviderLaneStore(t.db.kysely, { instance, platform: 'apns' });
  let writes = 0;
  const counted: ProviderLaneStore = {
    record: async (down: readonly DownLane[]) => {
      writes++;
      if (failing()) throw new Error('PostgreSQL away');
      await store.record(down);
    },
  };
  started.push({ lanes, recorder: recordLaneState(lanes, counted, logger, { refreshMs, retryMs, retryMaxMs }) });
  return { lanes, writes: () => writes };
}

const send = (lanes: ProviderLanes, times: number, answer: SendResult) => Promise.all(Array.from({ length: times }, () => lanes.send(LANE, async () => answer, true)));
const rowsOf = async (instance: string) => ((await readDownLanes(t.db.kysely)) ?? []).filter((r) => r.instance === instance);

describe("a pusher's record of its lanes down, where the monitor reads them", () => {
  it('writes a lane when it goes down and when it answers again, not for the pushes held meanwhile', async () => {
    const p = pusher('apns-pusher@change:1', 60_000);
    await send(p.lanes, 5, outage);
    const rows = await waitFor('the lane recorded down', async () => {
      const found = await rowsOf('apns-pusher@change:1');
      return found.length > 0 ? found : undefined;
    });
    expect(rows).toEqual([expect.objectContaining({ platform: 'apns', lane: LANE })]);
    expect(p.writes()).toBe(1);
    // Held while down: a hundred pushes, no statement.
    await send(p.lanes, 100, delivered);
    expect(p.writes()).toBe(1);
    // Its trial answered: the lane is up, and its row goes.
    await new Promise((r) => setTimeout(r, PROBE_MS + 50));
    await send(p.lanes, 1, delivered);
    await waitFor('the row gone', async () => (await rowsOf('apns-pusher@change:1')).length === 0);
    expect(p.writes()).toBe(2);
  });

  it('writes its lanes down again every refresh while any is down, and nothing once none is', async () => {
    const p = pusher('apns-pusher@refresh:2', 100);
    await send(p.lanes, 5, outage);
    await waitFor('refreshed twice', () => p.writes() >= 3);
    expect(await rowsOf('apns-pusher@refresh:2')).toHaveLength(1);
    await new Promise((r) => setTimeout(r, PROBE_MS + 50));
    await send(p.lanes, 1, delivered);
    await waitFor('the row gone', async () => (await rowsOf('apns-pusher@refresh:2')).length === 0);
    const after = p.writes();
    await new Promise((r) => setTimeout(r, 400));
    expect(p.writes()).toBe(after);
  });

  it('no longer says a lane down once no push came to try it for quietMs (as its gauge), though it stays due its trial', async () => {
    const p = pusher('apns-pusher@quiet:3', 60_000, { quietMs: 200 });
    await send(p.lanes, 5, outage);
    await waitFor('the lane recorded down', async () => (await rowsOf('apns-pusher@quiet:3')).length === 1);
    await waitFor('the row gone, the lane quiet', async () => (await rowsOf('apns-pusher@quiet:3')).length === 0);
    expect(p.lanes.downSince(LANE)).toBeDefined();
  });

  // Not at the next refresh (30 s): an outage of PostgreSQL longer than LANE_STALE_MS leaves every
  // row stale, and a monitor reading them before that refresh resolved provider-down, to raise it
  // again at the refresh. Each refresh here is a minute away: only the retry can write.
  it('writes again within its retry what a failed write left, the lane up meanwhile', async () => {
    let away = false;
    const p = pusher('apns-pusher@failing:4', 60_000, { failing: () => away });
    await send(p.lanes, 5, outage);
    await waitFor('the lane recorded down', async () => (await rowsOf('apns-pusher@failing:4')).length === 1);
    away = true;
    await new Promise((r) => setTimeout(r, PROBE_MS + 50));
    const before = p.writes();
    await send(p.lanes, 1, delivered);
    await waitFor('the write of the lane up tried, and failed', () => p.writes() > before);
    away = false;
    await waitFor('the row gone', async () => (await rowsOf('apns-pusher@failing:4')).length === 0, { timeoutMs: 3_000 });
  });

  it('writes a lane taken down while PostgreSQL was away within a few hundred milliseconds of its return, trying meanwhile at a bounded interval, and stops once written', async () => {
    let away = true;
    const p = pusher('apns-pusher@retry:5', 60_000, { failing: () => away });
    await send(p.lanes, 5, outage);
    // Tried at once, then 100, 200, 400, 400 … ms after each failure.
    await waitFor('tried four times', () => p.writes() >= 4, { timeoutMs: 3_000 });
    const tried = p.writes();
    await new Promise((r) => setTimeout(r, 1_000));
    expect(p.writes() - tried).toBeGreaterThanOrEqual(1);
    expect(p.writes() - tried).toBeLessThanOrEqual(3);
    away = false;
    const back = Date.now();
    await waitFor('the lane recorded down', async () => (await rowsOf('apns-pusher@retry:5')).length === 1, { timeoutMs: 3_000 });
    expect(Date.now() - back).toBeLessThan(1_500);
    const written = p.writes();
    await new Promise((r) => setTimeout(r, 600));
    expect(p.writes()).toBe(written);
  });
});
