import { readFileSync } from 'node:fs';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { WEB_DEMO_DIR } from './web-demo-routes.ts';

type Listener = (event: { data: unknown; waitUntil(p: Promise<unknown>): void }) => void;

/** The demo's service worker run as a browser would, with the notification API recorded. */
async function pushTo(payload: object): Promise<Array<{ title: string; options: { body?: string } }>> {
  const shown: Array<{ title: string; options: { body?: string } }> = [];
  const listeners = new Map<string, Listener>();
  const self = {
    addEventListener: (type: string, listener: Listener) => void listeners.set(type, listener),
    skipWaiting: () => undefined,
    registration: { showNotification: (title: string, options: { body?: string }) => Promise.resolve(void shown.push({ title, options })) },
    clients: { claim: () => Promise.resolve(), matchAll: () => Promise.resolve([]) },
  };
  runInNewContext(readFileSync(`${WEB_DEMO_DIR}sw.js`, 'utf8'), { self, navigator: {} });
  const waits: Array<Promise<unknown>> = [];
  listeners.get('push')?.({ data: { json: () => payload, text: () => JSON.stringify(payload) }, waitUntil: (p) => void waits.push(p) });
  await Promise.all(waits);
  return shown;
}

describe("the demo's service worker", () => {
  it('shows a notification for every push, a background one too (Safari revokes the permission of a worker that shows none)', async () => {
    expect(await pushTo({ title: 'Hi', body: 'there', jobId: 'j', pushId: 'p' })).toEqual([{ title: 'Hi', options: expect.objectContaining({ body: 'there' }) as unknown }]);
    const background = await pushTo({ data: { k: 'v' }, silent: true, jobId: 'j', pushId: 'p' });
    expect(background).toEqual([{ title: 'Herald', options: expect.objectContaining({ body: 'Updated in the background' }) as unknown }]);
  });
});
