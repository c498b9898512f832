export * from './rate-limit-store.ts';
export * from './rate-limiter.ts';
export * from './window-share.ts';
export * from './aimd.ts';
export * from './token-bucket.ts';
export * from './back-pressure.ts';
export * from './memory-rate-limit-store.ts';
export type { LimiterMetrics } from './limiter-metrics.ts';
