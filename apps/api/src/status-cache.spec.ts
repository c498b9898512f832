import { describe, expect, it } from 'vitest';
import { cachedStatus } from './status-cache.ts';

/** A status read that takes `ms` of a clock the test moves, counting its reads. */
function reader(ms: number, keep: (status: string) => boolean = () => true) {
  let clock = 0;
  const reads: string[] = [];
  const cache = cachedStatus(
    async (id: string) => {
      reads.push(id);
      const n = reads.length;
      clock += ms;
      return `${id}#${n}`;
    },
    keep,
    () => clock,
  );
  return { cache, reads, advance: (by: number) => void (clock += by) };
}

describe("a job's status as the API reads it", () => {
  it("reads a quick status afresh each time (a job to a few users: its progress at once)", async () => {
    const { cache, reads } = reader(100);
    expect([await cache.read('j'), await cache.read('j')]).toEqual(['j#1', 'j#2']);
    expect(reads).toHaveLength(2);
  });

  it("answers a slow one (a broadcast's count) again for ten times as long as it took, then reads it afresh", async () => {
    const { cache, reads, advance } = reader(400);
    expect(await cache.read('big')).toBe('big#1');
    advance(3_000);
    expect(await cache.read('big')).toBe('big#1');
    advance(1_100);
    expect(await cache.read('big')).toBe('big#2');
    expect(await cache.read('other')).toBe('other#3');
    expect(reads).toEqual(['big', 'big', 'other']);
  });

  it('keeps one at most 30 s however slow, shares a read under way, and forgets one cancelled here', async () => {
    const { cache, reads, advance } = reader(10_000);
    const [a, b] = await Promise.all([cache.read('huge'), cache.read('huge')]);
    expect([a, b]).toEqual(['huge#1', 'huge#1']);
    advance(29_000);
    expect(await cache.read('huge')).toBe('huge#1');
    advance(2_000);
    expect(await cache.read('huge')).toBe('huge#2');
    cache.forget('huge');
    expect(await cache.read('huge')).toBe('huge#3');
    expect(reads).toHaveLength(3);
  });

  it("reads afresh a slow status it is told is not worth keeping (a small job's: its slow read was a stall, not its count)", async () => {
    const { cache, reads } = reader(400, (status) => !status.startsWith('small'));
    expect([await cache.read('small'), await cache.read('small')]).toEqual(['small#1', 'small#2']);
    expect(reads).toHaveLength(2);
  });
});
