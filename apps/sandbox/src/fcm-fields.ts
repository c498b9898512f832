import { isObject, type Json } from './json.ts';
import { badRequest, googleError, type GoogleError } from './google-errors.ts';

/** A v1 request FCM refuses: 400 INVALID_ARGUMENT with Google's message, and a BadRequest detail naming the field. */
export type FcmProblem = { ok: false; error: GoogleError };

/** Checks one field's value; `at` is its path, e.g. `message.android.ttl`. */
export type FieldCheck = (value: unknown, at: string) => FcmProblem | undefined;

export { isObject, type Json };

/** A bad value in the request: `field` is its path (`message.android.ttl`), if the answer names one. */
export const invalid = (message: string, field?: string): FcmProblem => ({ ok: false, error: badRequest(message, field) });

/** An FCM-specific INVALID_ARGUMENT (the FcmError detail, no field named): a bad token, a message too big. */
export const invalidForFcm = (message: string): FcmProblem => ({ ok: false, error: googleError('INVALID_ARGUMENT', message) });

export const unknownField = (name: string, at?: string): FcmProblem =>
  invalid(`Invalid JSON payload received. Unknown name "${name}"${at === undefined ? '' : ` at '${at}'`}: Cannot find field.`, at);

export const typeError = (at: string, type: string, value: unknown, hint?: string): FcmProblem =>
  invalid(`Invalid value at '${at}' (${type}), ${JSON.stringify(value)}${hint === undefined ? '' : `: ${hint}`}`, at);

export const isString = (v: unknown): v is string => typeof v === 'string';
export const isBool = (v: unknown): v is boolean => typeof v === 'boolean';
/** proto3 JSON takes an int32 as a number or a decimal string. */
export const isInt32 = (v: unknown): boolean => {
  const n = typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v;
  return Number.isInteger(n) && (n as number) >= -(2 ** 31) && (n as number) < 2 ** 31;
};

export const scalar = (ok: (v: unknown) => boolean, type: string, hint?: string): FieldCheck => (v, at) =>
  ok(v) ? undefined : typeError(at, type, v, hint);

export const repeated = (each: FieldCheck, type: string): FieldCheck => (v, at) => {
  if (!Array.isArray(v)) return typeError(at, type, v);
  for (const [i, item] of v.entries()) {
    const problem = each(item, `${at}[${i}]`);
    if (problem !== undefined) return problem;
  }
  return undefined;
};

/** A proto enum: one of its names, or its number. */
export const enumOf = (type: string, names: readonly string[]): FieldCheck =>
  scalar((v) => (typeof v === 'string' && names.includes(v)) || (Number.isInteger(v) && (v as number) >= 0 && (v as number) < names.length), type);

/** proto3 JSON accepts a field by its proto name (`channel_id`) or its lowerCamelCase JSON name (`channelId`). */
export const protoName = (name: string): string => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Every field must be known to `table` and pass its check; null means "unset" in proto3 JSON. */
export function checkFields(value: Json, at: string, table: Readonly<Record<string, FieldCheck>>): FcmProblem | undefined {
  for (const [name, v] of Object.entries(value)) {
    const field = protoName(name);
    const check = Object.hasOwn(table, field) ? table[field] : undefined;
    if (check === undefined) return unknownField(name, at);
    const problem = v === null ? undefined : check(v, `${at}.${field}`);
    if (problem !== undefined) return problem;
  }
  return undefined;
}
