import { isUtf8 } from 'node:buffer';
import type { z } from 'zod';

export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

/** Readable one-line reason naming each failing field, e.g. `content.badge: expected number`. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`)
    .join('; ');
}

/** Validate an already-decoded value against a contract. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown): Parsed<z.infer<S>> {
  const result = schema.safeParse(value);
  return result.success
    ? { ok: true, value: result.data }
    : { ok: false, reason: `schema violation: ${describeIssues(result.error)}` };
}

/**
 * A message body read leniently as a JSON object, without a contract: for naming what a parked
 * message (one that may have broken its contract) was about. Undefined when it is not one.
 */
export function jsonObjectOf(body: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Why a body that is not UTF-8 is refused (RFC 8259 §8.1: JSON between systems is UTF-8). */
export const NOT_UTF8 = 'the body is not valid UTF-8';

/**
 * Decode a message body (UTF-8 JSON) and validate it; never throws. Bytes that are not UTF-8 (a
 * Latin-1 "é") are malformed: decoded leniently, each became U+FFFD, and two users' ids could become
 * one ("cafè" and "café" both "caf\uFFFD").
 */
export function decodeWith<S extends z.ZodType>(schema: S, body: Buffer): Parsed<z.infer<S>> {
  if (!isUtf8(body)) return { ok: false, reason: `malformed JSON: ${NOT_UTF8}` };
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (err) {
    return { ok: false, reason: `malformed JSON: ${(err as Error).message}` };
  }
  return parseWith(schema, value);
}
