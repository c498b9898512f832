export * from './vars.ts';
export * from './load-config.ts';
export * from './common.ts';
export * from './webhooks.ts';
export * from './bind-address.ts';
