export * from './herald-client.ts';
export * from './herald-http-client.ts';
