export type Json = Record<string, unknown>;

/** Set `key` only when there is a value: the providers' payloads leave absent fields out. */
export const put = (target: Json, key: string, value: unknown): void => {
  if (value !== undefined) target[key] = value;
};

/** A JSON object: not null, not an array. */
export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * `override` laid over `base`: objects merge key by key (recursively), anything else in the
 * override replaces the base value, and `null` in the override removes the key. Returns a new object.
 */
export function mergeJson(base: Json, override: Json): Json {
  const out: Json = { ...base };
  for (const [key, value] of Object.entries(override)) {
    if (value === null) delete out[key];
    else if (isObject(value) && isObject(out[key])) out[key] = mergeJson(out[key], value);
    else out[key] = value;
  }
  return out;
}
