import { createLogger } from '@herald/logging';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startDatabaseClock } from './database-clock.ts';
import { createSpecDatabase, type SpecDatabase } from './spec-database.ts';
import { createDatabase } from './database.ts';

let t: SpecDatabase;
beforeAll(async () => {
  t = await createSpecDatabase('db_clock');
});
afterAll(() => t?.drop());

describe("PostgreSQL's clock, read from a process", () => {
  it("reads PostgreSQL's time on a host whose own clock is ten minutes behind, and says the host's clock is off", async () => {
    const logger = createLogger({ service: 'db-clock-spec', level: 'silent', format: 'json' });
    const warn = vi.spyOn(logger, 'warn');
    const clock = startDatabaseClock(t.db.kysely, { processNow: () => Date.now() - 600_000, logger });
    await clock.measured;
    try {
      // This test's process and PostgreSQL share a host, so the real clock is PostgreSQL's.
      expect(Math.abs(clock.now().getTime() - Date.now())).toBeLessThan(1_000);
      expect(Math.abs(clock.offsetMs() - 600_000)).toBeLessThan(1_000);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn.mock.calls[0]?.[0]).toEqual({ offsetMs: expect.any(Number) as unknown });
    } finally {
      clock.stop();
    }
  });

  it("keeps the process's own clock while PostgreSQL does not answer", async () => {
    const away = createDatabase({ url: 'postgres://postgres@127.0.0.1:1/none', schema: 'none', connectTimeoutMs: 500 });
    try {
      const clock = startDatabaseClock(away.kysely, { processNow: () => 1_000 });
      await clock.measured;
      expect(clock.now().getTime()).toBe(1_000);
      clock.stop();
    } finally {
      await away.close();
    }
  });
});
