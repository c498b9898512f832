import {
  ApiErrorBody,
  ApiKeyCreate,
  ApiKeyCreated,
  AppCreate,
  AppRotate,
  AppUpdate,
  AppView,
  ChangeAccepted,
  ChangePublish,
  DeviceRegister,
  DeviceUnregister,
  JobAccepted,
  JobBatch,
  JobBatchAccepted,
  JobCancelled,
  JobStatus,
  OperatorKeyCreate,
  OperatorKeyCreated,
  PushJob,
  SubscriptionCreate,
  SubscriptionCreated,
  SubscriptionSecretRotate,
  SubscriptionList,
  SubscriptionListQuery,
  SubscriptionView,
} from '@herald/contracts';
import { z } from 'zod';
import { DEVICE_LIST_OPERATION, PREFERENCE_INPUTS, PREFERENCE_PATHS, PREFERENCE_SCHEMAS, queryParameters } from './openapi-preferences.ts';
import { JOB_PUSH_PATHS, JOB_PUSH_SCHEMAS } from './openapi-job-pushes.ts';
import { WEB_PUSH_INPUTS, WEB_PUSH_PATHS, WEB_PUSH_SCHEMAS } from './openapi-web-push.ts';
import { AUDIENCE_INPUTS, AUDIENCE_PATHS, AUDIENCE_SCHEMAS } from './openapi-audiences.ts';

/** Every schema the document names, straight from libs/contracts: the API validates with these same objects. */
const SCHEMAS = { PushJob, JobBatch, JobAccepted, JobBatchAccepted, JobStatus, JobCancelled, DeviceRegister, DeviceUnregister, AppCreate, AppUpdate, AppRotate, AppView, ApiKeyCreate, ApiKeyCreated, ApiError: ApiErrorBody, SubscriptionCreate, SubscriptionSecretRotate, SubscriptionCreated, SubscriptionView, SubscriptionList, ChangePublish, ChangeAccepted, OperatorKeyCreate, OperatorKeyCreated, ...PREFERENCE_SCHEMAS, ...JOB_PUSH_SCHEMAS, ...WEB_PUSH_SCHEMAS, ...AUDIENCE_SCHEMAS };
type SchemaName = keyof typeof SCHEMAS;

function component(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown>;
  delete json['$schema'];
  return json;
}

const ref = (name: SchemaName) => ({ $ref: `#/components/schemas/${name}` });
const body = (name: SchemaName, required = true) => ({ required, content: { 'application/json': { schema: ref(name) } } });
const answer = (description: string, name?: SchemaName) => ({ description, ...(name !== undefined && { content: { 'application/json': { schema: ref(name) } } }) });
const errors = (...codes: number[]) => Object.fromEntries(codes.map((c) => [String(c), answer('error (see error.code and error.message)', 'ApiError')]));
/** A job's 400: which providers' rules it is held to. */
const jobRefused = answer("the job breaks the contract or a provider's rules (error.issues name each field): APNs' and FCM's always, Web Push's (3,993 bytes of JSON) when the app has VAPID keys of its own or Web Push subscriptions", 'ApiError');
const jobId = [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }];
const subscriptionId = [{ name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }];
const appId = [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }];
const team = [{ apiKey: [] }];
const admin = [{ adminKey: [] }];

const PATHS = {
  '/v1/jobs': {
    post: { summary: 'Publish a push job (to userId, userIds, or an audience: topic, followersOf or broadcast, with an optional segment; 404 for an unknown topic; 409 job-id-conflict for an id another app uses, job-id-reused for an id accepted before with other content, job-cancelled for an id cancelled since)', security: team, requestBody: body('PushJob'), responses: { '202': answer('accepted and confirmed by RabbitMQ', 'JobAccepted'), '200': answer('this job id was accepted before: nothing published', 'JobAccepted'), ...errors(400, 401, 403, 404, 409, 413, 415, 422, 503), '400': jobRefused } },
  },
  '/v1/jobs:batch': {
    post: { summary: 'Publish up to 1,000 push jobs (all or none pass validation)', security: team, requestBody: body('JobBatch'), responses: { '202': answer('accepted', 'JobBatchAccepted'), ...errors(400, 401, 403, 409, 413, 415, 422, 503), '400': jobRefused } },
  },
  '/v1/jobs/{id}': {
    get: { summary: "A job's status: its state (expanding, sending, done, cancelled), audience progress, and counts that add up", security: team, parameters: jobId, responses: { '200': answer('status', 'JobStatus'), ...errors(401, 404) } },
    delete: { summary: 'Cancel a job: stop its running fan-out, drop its queued pushes, remove its scheduled ones (cancelled counts those)', security: team, parameters: jobId, responses: { '200': answer('cancelled', 'JobCancelled'), ...errors(401, 404) } },
  },
  ...JOB_PUSH_PATHS,
  '/v1/devices': {
    get: DEVICE_LIST_OPERATION,
    post: { summary: 'Register a device: an APNs or FCM token, or a browser subscription (platform web: token = endpoint and keys, or subscription = PushSubscription.toJSON(); its push service must be on the host list of the app)', security: team, requestBody: body('DeviceRegister'), responses: { '202': answer('published to push.registrations'), ...errors(400, 401, 403, 413, 415, 422, 503) } },
    delete: { summary: 'Unregister a device', security: team, requestBody: body('DeviceUnregister'), responses: { '202': answer('published to push.registrations'), ...errors(400, 401, 403, 413, 415, 422, 503) } },
  },
  ...PREFERENCE_PATHS,
  ...WEB_PUSH_PATHS,
  ...AUDIENCE_PATHS,
  '/v1/subscriptions': {
    post: { summary: 'Subscribe a callback URL to a resource (or "*" for every resource of the type); the secret is returned once. A team has at most WEBHOOK_MAX_SUBSCRIPTIONS_PER_TEAM (default 1,000): past it, 409 subscription-limit; one of the same callback URL and resource already: 409 subscription-exists', security: team, requestBody: body('SubscriptionCreate'), responses: { '201': answer('created', 'SubscriptionCreated'), ...errors(400, 401, 409, 413, 415, 422, 503) } },
    get: { summary: "The team's subscriptions (never their secrets), paged in id order: at most limit (default and most 1,000) a page; pass the answer's next as after", security: team, parameters: queryParameters(SubscriptionListQuery), responses: { '200': answer('one page of subscriptions', 'SubscriptionList'), ...errors(400, 401) } },
  },
  '/v1/subscriptions/{id}': {
    get: { summary: 'One subscription', security: team, parameters: subscriptionId, responses: { '200': answer('subscription', 'SubscriptionView'), ...errors(401, 404) } },
    delete: { summary: 'Delete a subscription (notifications already queued for it are dropped)', security: team, parameters: subscriptionId, responses: { '204': answer('deleted'), ...errors(401, 404) } },
  },
  '/v1/subscriptions/{id}/enable': {
    post: { summary: 'Enable a subscription again after it was disabled for failing', security: team, parameters: subscriptionId, responses: { '200': answer('enabled', 'SubscriptionView'), ...errors(401, 404) } },
  },
  '/v1/subscriptions/{id}/rotate-secret': {
    post: { summary: 'A new secret (given, or generated), returned once; deliveries carry a signature (v1=) by the current secret too for keepPreviousForS (default a day), so the receiver switches within it', security: team, parameters: subscriptionId, requestBody: body('SubscriptionSecretRotate', false), responses: { '200': answer('rotated', 'SubscriptionCreated'), ...errors(400, 401, 404, 413, 415, 503) } },
  },
  '/v1/changes': {
    post: { summary: "Publish a resource's change; subscribers of it get the diff", security: team, requestBody: body('ChangePublish'), responses: { '202': answer('confirmed by RabbitMQ', 'ChangeAccepted'), ...errors(400, 401, 413, 415, 422, 503) } },
  },
  '/admin/apps': {
    get: { summary: 'List apps', security: admin, responses: { '200': answer('apps (never secrets)') } },
    post: { summary: 'Add an app, optionally with credentials', security: admin, requestBody: body('AppCreate'), responses: { '201': answer('created', 'AppView'), ...errors(400, 401, 409) } },
  },
  '/admin/apps/{id}': {
    patch: { summary: "Update an app's topic, enabled flag or connection settings (endpoint, CA, proxy: null clears a field)", security: admin, parameters: appId, requestBody: body('AppUpdate'), responses: { '200': answer('updated', 'AppView'), ...errors(400, 401, 404) } },
  },
  '/admin/apps/{id}/disable': { post: { summary: 'Disable an app', security: admin, parameters: appId, responses: { '200': answer('disabled', 'AppView'), ...errors(401, 404) } } },
  '/admin/apps/{id}/enable': { post: { summary: 'Enable an app', security: admin, parameters: appId, responses: { '200': answer('enabled', 'AppView'), ...errors(401, 404) } } },
  '/admin/apps/{id}/credentials': {
    put: { summary: "Rotate an app's credentials (pushers switch without a restart)", security: admin, parameters: appId, requestBody: body('AppRotate'), responses: { '200': answer('rotated', 'AppView'), ...errors(400, 401, 404) } },
  },
  '/admin/keys': { post: { summary: 'Create a team API key (shown once) for apps that exist, or "*" (422 unknown-app naming apps.N otherwise)', security: admin, requestBody: body('ApiKeyCreate'), responses: { '201': answer('created', 'ApiKeyCreated'), ...errors(400, 401, 422) } } },
  '/admin/operator-keys': {
    post: { summary: "Create an operator key for a person (shown once): the monitor's dashboard, its write actions and these admin routes", security: admin, requestBody: body('OperatorKeyCreate'), responses: { '201': answer('created', 'OperatorKeyCreated'), ...errors(400, 401) } },
  },
};

/** The OpenAPI 3.1 document, generated from the contract schemas (built once, at start-up). */
export function openApiDocument(): Record<string, unknown> {
  const inputs = new Set<SchemaName>(['PushJob', 'JobBatch', 'DeviceRegister', 'DeviceUnregister', 'AppCreate', 'AppUpdate', 'AppRotate', 'ApiKeyCreate', 'OperatorKeyCreate', 'SubscriptionCreate', 'SubscriptionSecretRotate', 'ChangePublish']);
  const schemas = Object.fromEntries(Object.entries(SCHEMAS).map(([name, s]) => [name, component(s, inputs.has(name as SchemaName) || PREFERENCE_INPUTS.has(name) || WEB_PUSH_INPUTS.has(name) || AUDIENCE_INPUTS.has(name) ? 'input' : 'output')]));
  return {
    openapi: '3.1.0',
    info: { title: 'Herald HTTP API', version: '1', description: 'Publish push jobs, manage devices and per-app opt-outs and mutes, read job status, manage webhook subscriptions and publish change events. Every body is validated with the schemas below.' },
    components: {
      schemas,
      securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'team API key (herald keys create)' }, adminKey: { type: 'http', scheme: 'bearer', description: 'an operator key (herald keys create --operator <name>; who acted goes into the audit log) or the bootstrap HERALD_ADMIN_KEY; every admin write is audited' } },
    },
    paths: PATHS,
  };
}
