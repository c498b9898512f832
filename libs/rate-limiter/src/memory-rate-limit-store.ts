import type { LimitedChannel } from '@herald/contracts';
import type { AppPause, BudgetKey, ConfiguredLimit, Grant, RateLimitStore } from './rate-limit-store.ts';
import { windowShare } from './window-share.ts';

/**
 * The PostgreSQL store's semantics in one process (for unit specs and benchmarks): the same
 * window arithmetic, the same "one window's share at most" guarantee.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly limits = new Map<string, { limit: ConfiguredLimit; window: number; granted: number }>();
  /** `${platform}/${app}` → paused until (this store's clock). */
  private readonly paused = new Map<string, number>();
  leases = 0;

  constructor(private readonly now: () => number = Date.now) {}

  set(key: BudgetKey, ratePerSec: number): void {
    const id = `${key.platform}/${key.app ?? ''}`;
    const existing = this.limits.get(id);
    const limit = { platform: key.platform, app: key.app ?? '', ratePerSec };
    this.limits.set(id, { window: existing?.window ?? 0, granted: existing?.granted ?? 0, limit });
  }

  remove(key: BudgetKey): void {
    this.limits.delete(`${key.platform}/${key.app ?? ''}`);
  }

  list(): Promise<ConfiguredLimit[]> {
    return Promise.resolve([...this.limits.values()].map((s) => ({ ...s.limit })));
  }

  pause(key: { platform: LimitedChannel; app: string }, ms: number): Promise<void> {
    const id = `${key.platform}/${key.app}`;
    this.paused.set(id, Math.max(this.paused.get(id) ?? 0, this.now() + ms));
    return Promise.resolve();
  }

  pauses(platform: LimitedChannel): Promise<AppPause[]> {
    const now = this.now();
    const running = [...this.paused].filter(([id, until]) => id.startsWith(`${platform}/`) && until > now);
    return Promise.resolve(running.map(([id, until]) => ({ app: id.slice(platform.length + 1), msLeft: until - now })));
  }

  lease(key: BudgetKey, want: number, windowMs: number): Promise<Grant | undefined> {
    this.leases++;
    const state = this.limits.get(`${key.platform}/${key.app ?? ''}`);
    if (state === undefined) return Promise.resolve(undefined);
    const now = this.now();
    const index = Math.floor(now / windowMs);
    if (index !== state.window) Object.assign(state, { window: index, granted: 0 });
    const msLeftInWindow = (index + 1) * windowMs - now;
    const share = windowShare(state.limit.ratePerSec, index, windowMs);
    // What the window has left, and in one lease no more than its share of the time left.
    const granted = Math.max(0, Math.min(want, share - state.granted, Math.ceil((share * msLeftInWindow) / windowMs)));
    state.granted += granted;
    return Promise.resolve({ granted, ratePerSec: state.limit.ratePerSec, msLeftInWindow, windowIndex: index });
  }
}
