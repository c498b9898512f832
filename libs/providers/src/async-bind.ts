import { AsyncResource } from 'node:async_hooks';

let installed = false;

/**
 * Node 20's `http2` client binds every request to a fresh `AsyncResource` (`request()` in
 * lib/internal/http2/core.js), and Node 20's `AsyncResource.prototype.bind` gives each bound
 * function the deprecated `asyncResource` accessor (DEP0172): two `util.deprecate` wrappers, each
 * re-parenting a function's prototype. That costs about 12 µs of CPU a call here (against 0.6 µs
 * without the accessor), once per push, in both pushers: APNs through node-apn and FCM through
 * our own sessions both send with `ClientHttp2Session.request()`. Node has since stopped the
 * re-parenting (nodejs/node#59195, #59518) and later removed the accessor (DEP0172 End-of-Life,
 * nodejs/node#58618). ADR 0017.
 *
 * This gives the running process the `bind` of those later releases: the same function, run in
 * the resource's async scope with the same `this` and arguments, and the same `length`, without
 * the deprecated property. It is installed only where `bind` still adds that property, once, and changes
 * nothing else. Herald and its dependencies never read `asyncResource` from a bound function.
 */
export function useEndOfLifeAsyncBind(): void {
  if (installed || !('asyncResource' in new AsyncResource('HeraldProbe').bind(() => undefined))) return;
  const nodeBind = AsyncResource.prototype.bind;
  const bindTo = (resource: AsyncResource, fn: (...args: unknown[]) => unknown, thisArg: unknown): ((...args: unknown[]) => unknown) => {
    const bound =
      thisArg === undefined
        ? function bound(this: unknown, ...args: unknown[]): unknown {
            return resource.runInAsyncScope(fn, this, ...args);
          }
        : resource.runInAsyncScope.bind(resource, fn, thisArg);
    Object.defineProperty(bound, 'length', { configurable: true, enumerable: false, value: fn.length, writable: false });
    return bound;
  };
  AsyncResource.prototype.bind = function bind(this: AsyncResource, fn: (...args: unknown[]) => unknown, thisArg?: unknown) {
    // Node's own bind for what is not a function: its ERR_INVALID_ARG_TYPE, exactly.
    if (typeof fn !== 'function') return Reflect.apply(nodeBind, this, [fn, thisArg]) as never;
    return bindTo(this, fn, thisArg);
  } as AsyncResource['bind'];
  installed = true;
}
