/** A google.protobuf.Duration in its JSON form: seconds with up to nine decimals and an `s`, e.g. "3600s", "1.5s". */
const DURATION = /^\d+(\.\d{1,9})?s$/;

export const isDuration = (v: unknown): v is string => typeof v === 'string' && DURATION.test(v);

/** The seconds of a Duration string, or undefined when it is not one. */
export function durationSeconds(v: unknown): number | undefined {
  return isDuration(v) ? Number(v.slice(0, -1)) : undefined;
}
