import { describe, expect, it } from 'vitest';
import { WakeTimer } from './wake-timer.ts';

describe('WakeTimer', () => {
  it("wakes for a time earlier than its planned wake-up by the clock it is given (a descheduler's: PostgreSQL's), not this host's", async () => {
    // This host's clock ten minutes behind PostgreSQL's: the timer plans by PostgreSQL's.
    const dbNow = (): number => Date.now() + 600_000;
    const timer = new WakeTimer(dbNow);
    let woke = false;
    const sleeping = timer.sleep(30_000).then(() => (woke = true));
    // A push stored due in 5 s by PostgreSQL's clock: earlier than the wake-up 30 s away (by the host's, ten minutes later).
    timer.wakeIf(new Date(dbNow() + 5_000));
    await sleeping;
    expect(woke).toBe(true);
    // A time later than the planned wake-up does not wake it.
    const later = new WakeTimer(dbNow);
    let early = false;
    const rest = later.sleep(200).then(() => (early = true));
    later.wakeIf(new Date(dbNow() + 60_000));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(early).toBe(false);
    await rest;
  });
});
