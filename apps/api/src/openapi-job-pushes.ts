import { JobPush, JobPushList, JobPushesQuery } from '@herald/contracts';
import { z } from 'zod';

/** GET /v1/jobs/{id}/pushes' part of the OpenAPI document (merged in openapi.ts). */
export const JOB_PUSH_SCHEMAS = { JobPush, JobPushList };

const ref = (name: keyof typeof JOB_PUSH_SCHEMAS | 'ApiError') => ({ $ref: `#/components/schemas/${name}` });
const errors = (...codes: number[]) =>
  Object.fromEntries(
    codes.map((c) => [
      String(c),
      {
        description: 'error (see error.code, error.message and error.issues)',
        content: { 'application/json': { schema: ref('ApiError') } },
      },
    ]),
  );

/** The query parameters, from the same contract schema the route validates with. */
const query = Object.entries(JobPushesQuery.shape).map(([name, field]) => {
  const json = z.toJSONSchema(field as z.ZodType, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json['$schema'];
  return { name, in: 'query', required: false, schema: json };
});

export const JOB_PUSH_PATHS = {
  '/v1/jobs/{id}/pushes': {
    get: {
      summary:
        "A job's device pushes and what became of each: outcome, park code or provider reason, the provider's message id, the device (token masked). Pushes still on their way to a provider are counted in the status's inFlight and listed once they have an outcome; scheduled ones are listed as scheduled, and one an operator replayed from its parked queue as replayed (in flight again) until its new outcome. Paged in pushId order: pass the answer's next as after.",
      security: [{ apiKey: [] }],
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }, ...query],
      responses: {
        '200': { description: 'one page of device pushes', content: { 'application/json': { schema: ref('JobPushList') } } },
        ...errors(400, 401, 404),
      },
    },
  },
};
