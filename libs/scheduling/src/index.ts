export * from './resolve-deliver-at.ts';
export * from './local-time.ts';
export * from './jitter.ts';
