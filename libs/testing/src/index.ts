export * from './test-vhost.ts';
export * from './wait-for.ts';
export * from './test-database.ts';
export * from './management.ts';
export * from './local-cluster.ts';
export * from './tcp-proxy.ts';
export * from './database-outage.ts';
