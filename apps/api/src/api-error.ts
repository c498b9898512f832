import { describeIssues, type ApiErrorBody } from '@herald/contracts';
import type { z } from 'zod';

type Issue = { path: string; message: string };

/** An expected refusal: an HTTP status, a stable code and a sentence naming the problem. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly issues?: readonly Issue[],
  ) {
    super(message);
  }

  body(): ApiErrorBody {
    return { error: { code: this.code, message: this.message, ...(this.issues !== undefined && { issues: [...this.issues] }) } };
  }
}

const pathOf = (prefix: readonly PropertyKey[], path: readonly PropertyKey[]): string => {
  const all = [...prefix, ...path].map(String);
  return all.length > 0 ? all.join('.') : '(root)';
};

/** 400 naming each failing field's path, e.g. `jobs.3.content.badge`. */
export function invalidRequest(error: z.ZodError, prefix: readonly PropertyKey[] = []): ApiError {
  const issues = error.issues.map((i) => ({ path: pathOf(prefix, i.path), message: i.message }));
  const message = prefix.length === 0 ? describeIssues(error) : issues.map((i) => `${i.path}: ${i.message}`).join('; ');
  return new ApiError(400, 'invalid-request', message, issues);
}

/** The 400 for a request that carries no body where one is needed (whatever content type it named). */
export const emptyBody = (): ApiError => new ApiError(400, 'malformed-json', 'the request body is empty; it must be a JSON document');

/** Validate with a contract schema or throw the 400 (no body at all: emptyBody's). */
export function parseBody<S extends z.ZodType>(schema: S, value: unknown, prefix: readonly PropertyKey[] = []): z.infer<S> {
  if (value === undefined && prefix.length === 0) throw emptyBody();
  const result = schema.safeParse(value);
  if (!result.success) throw invalidRequest(result.error, prefix);
  return result.data;
}

/** Fastify's own refusals (body parsing, size, media type) in the same shape, each naming the problem. */
export function fromFastifyError(err: { code?: string; statusCode?: number; message: string }, limitBytes: number): ApiError | undefined {
  switch (err.code ?? '') {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, 'body-too-large', `the request body is larger than the limit of ${limitBytes} bytes`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(415, 'unsupported-media-type', 'the request body must be JSON: send content-type: application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return emptyBody();
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError(400, 'malformed-json', `the request body is not valid JSON: ${err.message}`);
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError(400, 'bad-content-length', 'the content-length does not match the body');
    default:
      if (err instanceof SyntaxError || (err.statusCode === 400 && /JSON/i.test(err.message))) {
        return new ApiError(400, 'malformed-json', `the request body is not valid JSON: ${err.message}`);
      }
      return undefined;
  }
}

/** An ApiError about one field: its message leads with the field's path, and its issues name it. */
export const fieldError = (status: number, code: string, path: string, message: string): ApiError => new ApiError(status, code, `${path}: ${message}`, [{ path, message }]);
