import { AsyncLocalStorage, AsyncResource, executionAsyncId } from 'node:async_hooks';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { useEndOfLifeAsyncBind } from './async-bind.ts';

describe('useEndOfLifeAsyncBind', () => {
  useEndOfLifeAsyncBind();

  it('binds as Node does: the resource’s async scope, the caller’s this and arguments, the same length', () => {
    const resource = new AsyncResource('Test');
    const seen: unknown[] = [];
    const fn = function (this: unknown, a: number, b: number): number {
      seen.push(this, executionAsyncId());
      return a + b;
    };
    const bound = resource.bind(fn);
    const receiver = { name: 'receiver' };
    expect(bound.call(receiver, 2, 3)).toBe(5);
    expect(seen).toEqual([receiver, resource.asyncId()]);
    expect(bound.length).toBe(2);

    // bind(fn, thisArg), as Node documents it; @types/node 20 declares only bind(fn).
    const withThis = Reflect.apply(resource.bind, resource, [fn, receiver]) as typeof fn;
    seen.length = 0;
    expect(withThis(4, 5)).toBe(9);
    expect(seen).toEqual([receiver, resource.asyncId()]);
  });

  it('no longer adds the deprecated asyncResource property (DEP0172, End-of-Life in later Node releases)', () => {
    expect('asyncResource' in new AsyncResource('Test').bind(() => 1)).toBe(false);
  });

  it('still rejects what is not a function', () => {
    expect(() => new AsyncResource('Test').bind(42 as unknown as () => void)).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }));
  });

  it('keeps an HTTP/2 request made before its session connects in the caller’s context', async () => {
    const server = http2.createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const store = new AsyncLocalStorage<string>();
    const session = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    try {
      // Requested while the session is still connecting: http2 submits it on 'connect' through
      // AsyncResource.bind(), and the stream's 'ready' comes from there.
      const seenOnReady = await store.run(
        'push-1',
        () =>
          new Promise<string | undefined>((resolve, reject) => {
            const req = session.request({ ':path': '/' });
            req.on('ready', () => resolve(store.getStore()));
            req.on('error', reject);
            req.resume();
            req.end();
          }),
      );
      expect(seenOnReady).toBe('push-1');
    } finally {
      session.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
