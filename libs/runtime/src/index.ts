export * from './ops-server.ts';
export * from './shutdown.ts';
export * from './run-service.ts';
export * from './pruner.ts';
export * from './deadline.ts';
