export type Json = Record<string, unknown>;

/** Set `key` only when there is a value: the providers' payloads leave absent fields out. */
export const put = (target: Json, key: string, value: unknown): void => {
  if (value !== undefined) target[key] = value;
};

/** A JSON object: not null, not an array. */
export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A copy of an object's own entries, as `{ ...o }` makes it (an own "__proto__" key stays a key), to
 * add keys to. Not the spread itself: on Node 20 the first key added to a spread's copy turns it into
 * a dictionary-mode object, slow to make and slower for JSON.stringify to read.
 */
export function copyOf(o: object): Json {
  const copy: Json = {};
  for (const key of Object.keys(o)) {
    const value: unknown = (o as Json)[key];
    if (key === '__proto__') Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
    else copy[key] = value;
  }
  return copy;
}

/**
 * `override` laid over `base`: objects merge key by key (recursively), anything else in the
 * override replaces the base value, and `null` in the override removes the key. Returns a new object.
 */
export function mergeJson(base: Json, override: Json): Json {
  const out = copyOf(base);
  for (const key of Object.keys(override)) {
    const value = override[key];
    if (value === null) delete out[key];
    else if (isObject(value) && isObject(out[key])) out[key] = mergeJson(out[key], value);
    else out[key] = value;
  }
  return out;
}
