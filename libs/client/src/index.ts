export * from './herald-client.ts';
