import { describe, expect, it } from 'vitest';
import { HostSlots } from './host-slots.ts';

describe('HostSlots', () => {
  it('bounds concurrent requests per host without touching other hosts', async () => {
    const slots = new HostSlots(2, 10);
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
    const slots = new HostSlots(1, 1);
    await slots.acquire('a:80');
    const abort = new AbortController();
    const queued = slots.acquire('a:80', abort.signal);
    expect(await slots.acquire('a:80')).toBeUndefined();
    abort.abort();
    expect(await queued).toBeUndefined();
  });
});
