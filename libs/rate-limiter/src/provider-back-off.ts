import type { LimitedChannel } from '@herald/contracts';
import type { Logger } from '@herald/logging';
import { AppPauses } from './app-pauses.ts';
import { BackPressure, type BackPressureOptions } from './back-pressure.ts';
import type { LimiterMetrics } from './limiter-metrics.ts';
import type { RateLimitStore } from './rate-limit-store.ts';
import { pauseAsked, throttleScope, type ProviderAnswer } from './throttle-scope.ts';

export interface ProviderBackOffDeps {
  platform: LimitedChannel;
  store: RateLimitStore;
  logger: Logger;
  metrics: LimiterMetrics;
  options: BackPressureOptions;
  now: () => number;
}

const DEFAULT_MAX_PAUSE_MS = 600_000;

/**
 * Provider push-back, as docs/adr/0006-provider-back-off.md decides it:
 * - a Retry-After pauses the app it came with, for at least that long: in this process at once,
 *   and in every pusher of the platform through the store (each reads it at its next refresh);
 *   unless the answer is about one device (APNs TooManyRequests, a Web Push 429: RFC 8030 §8.4's
 *   Retry-After is the wait "before it makes another request to the push resource"), when only
 *   that push waits it (its retry's delay); paused, one chatty device held the app back;
 * - a throttle without one slows down whom it is about (throttle-scope.ts): the platform in this
 *   process (AIMD), or the app in this process (AIMD), or nobody (one device: the push retries).
 * Web Push has a push service per browser vendor, each speaking for its own origin only (RFC 8030
 * §8.4: "before it makes another request to the push resource"): there `app` is the app at one
 * push service (senderKey) and the platform's pacing is that service's, so a Retry-After or a 503
 * from one holds back neither the app's pushes to the others nor other apps' pushes to them.
 */
export class ProviderBackOff {
  /** Per push service ('' for APNs and FCM, one service each). */
  private readonly platformPacing = new Map<string, BackPressure>();
  private readonly appPacing = new Map<string, BackPressure>();
  private readonly pauses = new AppPauses();
  /** Apps whose pause is being written to the store: one write per app at a time. */
  private readonly sharing = new Set<string>();
  /** Per app, the end (local clock) of the pause last written to the store. */
  private readonly shared = new Map<string, number>();

  constructor(private readonly deps: ProviderBackOffDeps) {}

  /** ms until the app may send again (a Retry-After pause); 0 when it is not paused. */
  pausedFor(app: string, nowMs = this.deps.now()): number {
    return this.pauses.msLeft(app, nowMs);
  }

  /** ms to wait before n pushes of the app may go (throttles); 0: go now (the tokens are taken). */
  delayFor(n: number, app: string | undefined, nowMs: number, service = ''): number {
    const forApp = app === undefined ? 0 : (this.appPacing.get(app)?.delayFor(n, nowMs) ?? 0);
    return forApp > 0 ? forApp : (this.platformPacing.get(service)?.delayFor(n, nowMs) ?? 0);
  }

  /** The rate a throttle slowed the app down to in this process (pushes/s) and when it is back to full; undefined: not slowed. */
  appSlowdown(app: string, nowMs: number): { ratePerSec: number; endsInMs: number } | undefined {
    return this.appPacing.get(app)?.slowdown(nowMs);
  }

  /** n pushes of the app asked to go (what a throttle halves, if more than went). */
  wanted(n: number, app: string | undefined, nowMs: number, service = ''): void {
    this.platformPacingOf(service, nowMs).wanted(n, nowMs);
    if (app !== undefined) this.pacingOf(app, nowMs).wanted(n, nowMs);
  }

  sent(n: number, app: string | undefined, nowMs: number, service = ''): void {
    this.platformPacingOf(service, nowMs).sent(n, nowMs);
    if (app !== undefined) this.pacingOf(app, nowMs).sent(n, nowMs);
  }

  /** The platform's slowdown here (its slowest push service's, for Web Push): 1 when none. */
  factor(nowMs: number): number {
    let slowest = 1;
    for (const pacing of this.platformPacing.values()) slowest = Math.min(slowest, pacing.factor(nowMs));
    return slowest;
  }

  /** `app`: the push's sender (senderKey: the app, or for Web Push the app at its push service `service`). */
  observe(answer: ProviderAnswer, app: string, service = ''): void {
    const now = this.deps.now();
    const scope = throttleScope(answer);
    // One device's throttle pauses nobody, Retry-After or not: the push itself waits it out.
    if (scope !== 'device') this.pauseFor(answer, app, now);
    const pacing = this.platformPacingOf(service, now);
    if (scope === 'platform' && pacing.throttled(now)) {
      const factor = pacing.factor(now);
      this.deps.metrics.backoffFactor.set({ platform: this.deps.platform }, this.factor(now));
      // push_service, not service: every log line of a Herald process carries `service`, its own name.
      this.deps.logger.warn({ reason: answer.reason, factor, ...(service !== '' && { push_service: service }) }, 'provider overloaded: this pusher slows the platform down');
    }
    if (scope === 'app' && this.pacingOf(app, now).throttled(now)) {
      this.deps.logger.warn(
        { app, reason: answer.reason, factor: this.pacingOf(app, now).factor(now) },
        'provider quota: this pusher slows the app down',
      );
    }
  }

  /** Read the fleet's pauses from the store (a pusher that got a Retry-After wrote it there). */
  async learn(): Promise<void> {
    const running = await this.deps.store.pauses(this.deps.platform);
    const now = this.deps.now();
    for (const { app, msLeft } of running) {
      const fresh = this.pauses.msLeft(app, now) === 0;
      if (!this.pauses.extend(app, now + msLeft) || !fresh) continue;
      this.deps.metrics.pauses.inc({ platform: this.deps.platform, app, source: 'fleet' });
      this.deps.logger.info({ app, msLeft }, 'another pusher got a Retry-After: app paused here too');
    }
    this.pauses.prune(now);
  }

  /** A Retry-After pauses the app (here at once, then fleet-wide); a burst of them counts once. */
  private pauseFor(answer: ProviderAnswer, app: string, now: number): void {
    const pauseMs = Math.min(pauseAsked(answer), this.deps.options.maxPauseMs ?? DEFAULT_MAX_PAUSE_MS);
    if (pauseMs <= 0) return;
    const wasPaused = this.pauses.msLeft(app, now) > 0;
    if (!this.pauses.extend(app, now + pauseMs)) return;
    void this.share(app);
    if (wasPaused) return;
    this.deps.metrics.pauses.inc({ platform: this.deps.platform, app, source: 'provider' });
    this.deps.logger.warn(
      { app, reason: answer.reason, retryAfterMs: answer.retryAfterMs, pauseMs },
      'provider asked to back off: app paused fleet-wide',
    );
  }

  private platformPacingOf(service: string, nowMs: number): BackPressure {
    let pacing = this.platformPacing.get(service);
    if (pacing === undefined) this.platformPacing.set(service, (pacing = new BackPressure(this.deps.options, nowMs)));
    return pacing;
  }

  private pacingOf(app: string, nowMs: number): BackPressure {
    let pacing = this.appPacing.get(app);
    if (pacing === undefined) this.appPacing.set(app, (pacing = new BackPressure(this.deps.options, nowMs)));
    return pacing;
  }

  /** Write the app's pause to the store; a pause extended meanwhile is written after it. */
  private async share(app: string): Promise<void> {
    if (this.sharing.has(app)) return;
    this.sharing.add(app);
    try {
      for (let end = this.pauses.endOf(app); end > (this.shared.get(app) ?? 0); end = this.pauses.endOf(app)) {
        this.shared.set(app, end);
        const ms = end - this.deps.now();
        if (ms > 0) await this.deps.store.pause({ platform: this.deps.platform, app }, ms);
      }
    } catch (err) {
      this.deps.logger.error(
        { err, app },
        'could not share a provider pause with the fleet: other pushers hold the app back only once they get their own answer',
      );
    } finally {
      this.sharing.delete(app);
    }
  }
}

/**
 * Whom a provider's pause or slowdown holds back: the app, or for Web Push the app at one push
 * service (`app@service`), since a push service speaks for its own origin only.
 */
export const senderKey = (app: string, service: string | undefined): string => (service === undefined || service === '' ? app : `${app}@${service}`);
