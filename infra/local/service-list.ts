/** The processes `npm start` runs, in start order. The sandbox comes first: pushers read its keys. */
export const SANDBOX = { name: 'sandbox', entry: 'apps/sandbox/src/main.ts' } as const;

export const SERVICES = [
  { name: 'registrar', entry: 'apps/registrar/src/main.ts' },
  { name: 'demuxer', entry: 'apps/demuxer/src/main.ts' },
  { name: 'apns-pusher', entry: 'apps/apns-pusher/src/main.ts' },
  { name: 'fcm-pusher', entry: 'apps/fcm-pusher/src/main.ts' },
  { name: 'web-pusher', entry: 'apps/web-pusher/src/main.ts' },
  { name: 'apns-descheduler', entry: 'apps/apns-descheduler/src/main.ts' },
  { name: 'fcm-descheduler', entry: 'apps/fcm-descheduler/src/main.ts' },
  { name: 'apns-invalidator', entry: 'apps/apns-invalidator/src/main.ts' },
  { name: 'fcm-invalidator', entry: 'apps/fcm-invalidator/src/main.ts' },
  { name: 'web-invalidator', entry: 'apps/web-invalidator/src/main.ts' },
  { name: 'api', entry: 'apps/api/src/main.ts' },
  { name: 'webhook-fanout', entry: 'apps/webhook-fanout/src/main.ts' },
  { name: 'webhook-pusher', entry: 'apps/webhook-pusher/src/main.ts' },
  { name: 'monitor', entry: 'apps/monitor/src/main.ts' },
] as const;

export type ServiceName = (typeof SERVICES)[number]['name'] | typeof SANDBOX.name;
