/** A parsed JSON object. */
export type Json = Record<string, unknown>;

/** A JSON object: not null, not an array. */
export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
