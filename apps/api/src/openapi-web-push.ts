import { VapidGenerate, VapidPublicKeyView, VapidRotate, WebPushUpdate, WebPushView } from '@herald/contracts';

/** Web Push's part of the OpenAPI document (merged in openapi.ts): the VAPID routes; web registration is POST /v1/devices. */
export const WEB_PUSH_SCHEMAS = { VapidGenerate, VapidRotate, WebPushUpdate, WebPushView, VapidPublicKeyView };
export const WEB_PUSH_INPUTS: ReadonlySet<string> = new Set(['VapidGenerate', 'VapidRotate', 'WebPushUpdate']);

type Name = keyof typeof WEB_PUSH_SCHEMAS;
const ref = (name: Name | 'ApiError') => ({ $ref: `#/components/schemas/${name}` });
const body = (name: Name, required = true) => ({ required, content: { 'application/json': { schema: ref(name) } } });
const answer = (description: string, name: Name) => ({ description, content: { 'application/json': { schema: ref(name) } } });
const errors = (...codes: number[]) =>
  Object.fromEntries(codes.map((c) => [String(c), { description: 'error (see error.code, error.message and error.issues)', content: { 'application/json': { schema: ref('ApiError') } } }]));
const appId = [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }];
const team = [{ apiKey: [] }];
const admin = [{ adminKey: [] }];

export const WEB_PUSH_PATHS = {
  '/v1/web-push/vapid-public-key': {
    get: {
      summary: "The app's VAPID public key: a web front end passes it as applicationServerKey to pushManager.subscribe() and registers the subscription (POST /v1/devices, platform web)",
      security: team,
      parameters: [{ name: 'app', in: 'query', required: false, description: 'the app; required when the API key acts for more than one', schema: { type: 'string' } }],
      responses: { '200': answer('the public key and contact subject', 'VapidPublicKeyView'), ...errors(400, 401, 403, 404) },
    },
  },
  '/admin/apps/{id}/web-push': {
    get: { summary: "An app's Web Push settings: VAPID public keys (never a private one), subject, push-service hosts", security: admin, parameters: appId, responses: { '200': answer('settings', 'WebPushView'), ...errors(401, 404) } },
    patch: {
      summary: 'Change the VAPID contact subject (pushers switch without a restart) and/or the push-service hosts subscriptions may use (null: the default list)',
      security: admin,
      parameters: appId,
      requestBody: body('WebPushUpdate'),
      responses: { '200': answer('updated', 'WebPushView'), ...errors(400, 401, 404, 409) },
    },
  },
  '/admin/apps/{id}/vapid': {
    post: {
      summary: "Generate the app's first VAPID key pair (the private key is sealed; 409 vapid-exists when it has one: rotate it)",
      security: admin,
      parameters: appId,
      requestBody: body('VapidGenerate'),
      responses: { '201': answer('generated', 'WebPushView'), ...errors(400, 401, 404, 409, 503) },
    },
  },
  '/admin/apps/{id}/vapid/rotate': {
    post: {
      summary: 'A new VAPID key pair; the current one is kept as the previous one so subscriptions made under it are still signed with it until browsers resubscribe (409 no-vapid when there is none; 409 previous-vapid-in-use while browsers are subscribed with the previous pair, unless force)',
      security: admin,
      parameters: appId,
      requestBody: body('VapidRotate', false),
      responses: { '200': answer('rotated', 'WebPushView'), ...errors(400, 401, 404, 409, 503) },
    },
  },
};
