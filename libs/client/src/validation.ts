import type { z } from 'zod';

/** The job or registration failed its contract; nothing was published. `issues` name each field. */
export class ValidationError extends Error {
  constructor(
    what: string,
    readonly issues: readonly string[],
  ) {
    super(`invalid ${what}: ${issues.join('; ')}`);
    this.name = 'ValidationError';
  }
}

/**
 * The value as the contract reads it, or ValidationError with one issue per zod issue, each
 * `path: message`. Built from the issues, not by splitting describeIssues' one line: a message may
 * itself hold "; " ("keys belong to a Web Push subscription; an APNs registration has none").
 */
export function validate<S extends z.ZodType>(schema: S, what: string, value: unknown): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new ValidationError(what, result.error.issues.map((i) => `${i.path.length > 0 ? i.path.join('.') : '(root)'}: ${i.message}`));
  return result.data;
}
