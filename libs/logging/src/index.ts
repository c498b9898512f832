export * from './logger.ts';
export * from './log-summary.ts';
