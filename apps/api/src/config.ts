import { bindAddress, commonConfig, int, optionalBearerKey, optionalStr, scheduleHorizonConfig, webhookSubscriptionConfig } from '@herald/config';
import { DEFAULT_JOB_PACK_SIZE } from '@herald/messaging';

export const apiConfig = {
  ...commonConfig,
  ...webhookSubscriptionConfig,
  WEBHOOK_MAX_SUBSCRIPTIONS_PER_TEAM: int('Most webhook subscriptions one team may have; a create past it is answered 409 subscription-limit', { default: '1000', min: 1 }),
  API_PORT: int('Port of the HTTP API for teams (0 picks a free port)', { default: '8080', min: 0, max: 65535 }),
  API_HOST: bindAddress('Address the HTTP API listens on (0.0.0.0: every IPv4 interface, :: every interface)'),
  API_BODY_LIMIT_BYTES: int('Largest request body the API reads; larger ones are answered 413', { default: '2097152', min: 1024 }),
  API_MAX_BODY_BYTES_IN_FLIGHT: int('Most request-body bytes the API works on at once, counted as they are read (not as a Content-Length announces them), until its answer is sent or its connection closes; a request arriving with the bound full is answered 503 overloaded with Retry-After, unread, and one whose body would pass it is answered so part-way. A request alone is always served, so a body larger than this still passes when nothing else is in flight. Each byte costs about 5 in memory while a batch is parsed, validated and published', {
    default: '33554432',
    min: 1024,
  }),
  API_REQUEST_TIMEOUT_MS: int('Longest time a client may take to send a whole request (headers and body); a slower one is answered 408 and its connection closed', {
    default: '30000',
    min: 1000,
  }),
  API_PUBLISH_CONFIRM_TIMEOUT_MS: int("Longest wait for RabbitMQ's confirm of a job, registration or change the API publishes; past it the request is answered 503 broker-unavailable (a broker blocking publishers for a memory or disk alarm otherwise holds every request for good). Such a job may still arrive: repost it with the same id", {
    default: '10000',
    min: 100,
  }),
  API_KEY_CACHE_TTL_MS: int('How long a looked-up API key (or its absence) is cached; a revoked key stops working within this', {
    default: '5000',
    min: 0,
  }),
  APP_CACHE_TTL_MS: int('How long app settings are cached', { default: '5000', min: 0 }),
  ...scheduleHorizonConfig,
  JOB_PACK_SIZE: int('Most jobs carried by one RabbitMQ message to push.jobs when the API accepts several at once (a batch request, concurrent requests; 1: one each); each request is still answered on its own job\'s confirm, and the demuxer reads each job on its own (ADR 0018)', {
    default: String(DEFAULT_JOB_PACK_SIZE),
    min: 1,
    max: 100,
  }),
  HERALD_SECRET_KEY: optionalStr(
    '32-byte key (64 hex characters or base64) that seals app credentials at rest (AES-256-GCM); during a rotation several, comma-separated: the first seals, each opens (herald apps reseal)',
    { secret: true },
  ),
  HERALD_ADMIN_KEY: optionalBearerKey('Bootstrap bearer key for the admin routes (/admin/...), beside operator keys (herald keys create --operator); unset: operator keys only', { secret: true, minLength: 32 }),
} as const;
