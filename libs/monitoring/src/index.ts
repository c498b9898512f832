export * from './queue-snapshot.ts';
export * from './management-api.ts';
export * from './thresholds.ts';
export * from './alarm-rules.ts';
export * from './alarm-tracker.ts';
