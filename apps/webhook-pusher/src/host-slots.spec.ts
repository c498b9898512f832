import { describe, expect, it } from 'vitest';
import { HostSlots } from './host-slots.ts';

describe('HostSlots', () => {
  it('bounds concurrent requests per host without touching other hosts', async () => {
    const slots = new HostSlots({ perHost: 2, maxQueued: 10, maxQueuedWhenSlow: 0 });
    const a1 = await slots.acquire('a:443');
    const a2 = await slots.acquire('a:443');
    let third: (() => void) | undefined;
    const waiting = slots.acquire('a:443').then((r) => (third = r));
    const b = await slots.acquire('b:443');
    expect(b).toBeDefined();
    expect(slots.active('a:443')).toBe(2);
    expect(third).toBeUndefined();
    a1?.();
    await waiting;
    expect(third).toBeDefined();
    expect(slots.active('a:443')).toBe(2);
    a2?.();
    third?.();
    third?.(); // releasing twice frees one slot only
    expect(slots.active('a:443')).toBe(0);
  });

  it('gives up when the host queue is full or the wait is aborted', async () => {
    const slots = new HostSlots({ perHost: 1, maxQueued: 1, maxQueuedWhenSlow: 0 });
    await slots.acquire('a:80');
    const abort = new AbortController();
    const queued = slots.acquire('a:80', abort.signal);
    expect(await slots.acquire('a:80')).toBeUndefined();
    abort.abort();
    expect(await queued).toBeUndefined();
  });

  it('lets fewer requests wait for a slow host, and sheds the extra waiters when it turns slow', async () => {
    const slots = new HostSlots({ perHost: 1, maxQueued: 3, maxQueuedWhenSlow: 1 });
    await slots.acquire('slow:443');
    const waiters = [slots.acquire('slow:443'), slots.acquire('slow:443'), slots.acquire('slow:443')];
    slots.noteSpeed('slow:443', true);
    const [first, ...shed] = await Promise.all([Promise.race([waiters[0], Promise.resolve('waiting')]), ...waiters.slice(1)]);
    expect(first).toBe('waiting');
    expect(shed).toEqual([undefined, undefined]);
    expect(await slots.acquire('slow:443')).toBeUndefined();
    slots.noteSpeed('slow:443', false);
    expect(await Promise.race([slots.acquire('slow:443'), Promise.resolve('waiting')])).toBe('waiting');
  });
});
