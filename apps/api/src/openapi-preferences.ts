import { DeviceList, MuteCreate, MuteDelete, MuteList, MuteView, OptOutChange, OptOutList, OptOutView, PreferenceRemoved, UserErasureRequest, UserErasureView, UserOfApp } from '@herald/contracts';
import { z } from 'zod';

/** The opt-out, mute and device-list routes' part of the OpenAPI document (merged in openapi.ts). */
export const PREFERENCE_SCHEMAS = { OptOutChange, OptOutView, OptOutList, MuteCreate, MuteDelete, MuteView, MuteList, PreferenceRemoved, DeviceList, UserErasureRequest, UserErasureView };
export const PREFERENCE_INPUTS: ReadonlySet<string> = new Set(['OptOutChange', 'MuteCreate', 'MuteDelete', 'UserErasureRequest']);

type Name = keyof typeof PREFERENCE_SCHEMAS;
const ref = (name: Name | 'ApiError') => ({ $ref: `#/components/schemas/${name}` });
const body = (name: Name) => ({ required: true, content: { 'application/json': { schema: ref(name) } } });
const answer = (description: string, name: Name) => ({ description, content: { 'application/json': { schema: ref(name) } } });
const errors = (...codes: number[]) =>
  Object.fromEntries(codes.map((c) => [String(c), { description: 'error (see error.code, error.message and error.issues)', content: { 'application/json': { schema: ref('ApiError') } } }]));
const team = [{ apiKey: [] }];

/** The query parameters of a list route, from the same contract schema the route validates with. */
export const queryParameters = (schema: z.ZodObject) =>
  Object.entries(schema.shape).map(([name, field]) => {
    const json = z.toJSONSchema(field as z.ZodType, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    delete json['$schema'];
    return { name, in: 'query', required: !(field as z.ZodType).safeParse(undefined).success, schema: json };
  });
const userOfApp = queryParameters(UserOfApp);
const refusals = errors(400, 401, 403, 413, 415, 422, 503);

export const PREFERENCE_PATHS = {
  '/v1/opt-outs': {
    post: { summary: "Opt a user out of a category of an app's pushes (idempotent)", security: team, requestBody: body('OptOutChange'), responses: { '201': answer('opted out', 'OptOutView'), '200': answer('was already opted out', 'OptOutView'), ...refusals } },
    delete: { summary: 'Opt a user back in to a category of an app', security: team, requestBody: body('OptOutChange'), responses: { '200': answer('removed: false when there was no such opt-out', 'PreferenceRemoved'), ...refusals } },
    get: { summary: "A user's opt-outs that apply to an app (the app's and every app's, app null)", security: team, parameters: userOfApp, responses: { '200': answer('opt-outs, newest first', 'OptOutList'), ...errors(400, 401, 403, 422, 503) } },
  },
  '/v1/mutes': {
    post: { summary: "Mute an object (e.g. a thread) of an app for a user, until a time or until removed; replaces the app's earlier mute of it", security: team, requestBody: body('MuteCreate'), responses: { '201': answer('muted', 'MuteView'), '200': answer('the existing mute, now with this until', 'MuteView'), ...refusals } },
    delete: { summary: 'Remove a mute', security: team, requestBody: body('MuteDelete'), responses: { '200': answer('removed: false when there was no such mute', 'PreferenceRemoved'), ...refusals } },
    get: { summary: "A user's mutes in force that apply to an app", security: team, parameters: userOfApp, responses: { '200': answer('mutes, newest first', 'MuteList'), ...errors(400, 401, 403, 422, 503) } },
  },
  '/v1/users:erase': {
    post: {
      summary:
        "Erase what Herald keeps of one user of an app: devices unregistered and stripped of the user and their attributes, topic memberships, follow edges, the app's opt-outs and mutes, pushes stored for later; the user's older events arriving later are ignored. Idempotent",
      security: team,
      requestBody: body('UserErasureRequest'),
      responses: { '200': answer('erased: what was removed, and what was kept as not the app\'s', 'UserErasureView'), ...refusals },
    },
  },
};

/** GET /v1/devices, merged into the '/v1/devices' path item (POST and DELETE register and unregister). */
export const DEVICE_LIST_OPERATION = {
  summary: "A user's devices of an app, valid and invalidated (tokens masked: the last 6 characters)",
  security: team,
  parameters: userOfApp,
  responses: { '200': answer('devices, newest registration first', 'DeviceList'), ...errors(400, 401, 403, 422, 503) },
};
