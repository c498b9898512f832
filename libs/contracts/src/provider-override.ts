import { z } from 'zod';

/**
 * Raw per-platform fields for what Herald does not model yet, merged last into what Herald
 * builds. The merged result is checked again against the providers' rules (size, headers), at
 * the door and in the pushers.
 */

/** A printable-ASCII header value of at most 64 bytes: Apple's apns-collapse-id rule. */
export const COLLAPSE_ID_MAX_BYTES = 64;
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/**
 * Why a collapse key / apns-collapse-id is unusable, or undefined. Header values travel as Latin-1
 * bytes, so only ASCII is safe. Spaces first or last are taken, and left out of the header sent
 * (RFC 9113 §8.2.1: an HTTP/2 field value must not start or end with whitespace; apns-notification.ts).
 */
export function collapseKeyProblem(value: string): string | undefined {
  const bytes = Buffer.byteLength(value, 'utf8');
  if (!PRINTABLE_ASCII.test(value)) {
    return `must be printable ASCII (no emoji, "€", tab or other control character) of at most ${COLLAPSE_ID_MAX_BYTES} bytes (APNs apns-collapse-id); this one has a character outside it`;
  }
  if (bytes > COLLAPSE_ID_MAX_BYTES) return `must be printable ASCII of at most ${COLLAPSE_ID_MAX_BYTES} bytes (APNs apns-collapse-id); this one is ${bytes} bytes`;
  return undefined;
}

export const CollapseKey = z
  .string()
  .min(1)
  .superRefine((v, ctx) => {
    const problem = collapseKeyProblem(v);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });

/**
 * The APNs request headers an override may set; apns-topic follows the app and push type, apns-id
 * the pushId. The push type is one Herald models: other types (location, complication, …) need
 * tokens of their own kind, and one sent to a device token would be answered
 * DeviceTokenNotForTopic, which invalidates a good token.
 */
export const ApnsOverrideHeaders = z.strictObject({
  'apns-push-type': z.enum(['alert', 'background', 'voip', 'liveactivity']).optional(),
  'apns-priority': z.enum(['1', '5', '10']).optional(),
  'apns-expiration': z.string().regex(/^\d{1,12}$/, 'must be epoch seconds (0: deliver once, do not store)').optional(),
  'apns-collapse-id': CollapseKey.optional(),
});

/** Deepest nesting a raw JSON value may have: deeper input is refused, not left to overflow a serializer. */
export const MAX_JSON_DEPTH = 32;

function jsonDepthExceeds(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (typeof v !== 'object' || v === null) continue;
    if (depth > limit) return true;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

/** A JSON object of at most MAX_JSON_DEPTH levels. */
export const JsonObject = z.record(z.string(), z.unknown()).superRefine((v, ctx) => {
  if (jsonDepthExceeds(v, MAX_JSON_DEPTH)) ctx.addIssue({ code: 'custom', message: `nests deeper than ${MAX_JSON_DEPTH} levels` });
});

export const ApnsOverride = z.strictObject({
  headers: ApnsOverrideHeaders.optional(),
  /** Merged into the payload; `aps` is merged into Herald's `aps` key by key. */
  payload: JsonObject.optional(),
});
export type ApnsOverride = z.infer<typeof ApnsOverride>;

/**
 * The headers of an FCM message's `apns` block. Google: "HTTP request headers defined in Apple Push
 * Notification Service ... such as apns-expiration and apns-priority": FCM forwards them to APNs, so
 * Apple's values hold (as ApnsOverrideHeaders', and a UUID apns-id). Through FCM a push goes to the
 * app's own token, with the topic FCM names (the Firebase app's bundle id): push types alert and
 * background only, and no apns-topic or authorization of the caller's (another topic would be
 * answered DeviceTokenNotForTopic). Names in any case, as HTTP's; Herald sends them in lower case
 * (HTTP/2's), merged with the headers it writes itself (fcm-message.ts).
 */
const FcmApnsHeaderValues: Readonly<Record<string, z.ZodType>> = {
  ...ApnsOverrideHeaders.shape,
  'apns-push-type': z.enum(['alert', 'background']),
  'apns-id': z.guid({ error: 'must be a UUID, 8-4-4-4-12 hex digits (Apple: BadMessageId)' }),
};
const FCM_OWN_APNS_HEADERS = new Set(['apns-topic', 'authorization']);
export const FcmApnsHeaders = z.record(z.string(), z.string()).superRefine((headers, ctx) => {
  const names = new Map<string, string>();
  for (const [name, value] of Object.entries(headers)) {
    const refuse = (message: string) => ctx.addIssue({ code: 'custom', path: [name], message });
    const header = name.toLowerCase();
    if (names.has(header)) refuse(`the same header as "${names.get(header)}" (header names are case-insensitive)`);
    names.set(header, name);
    if (FCM_OWN_APNS_HEADERS.has(header)) refuse(`FCM sets ${header} itself (the Firebase app's bundle id and credentials)`);
    // Own keys only: a header named "constructor" or "toString" found Object's own, and threw.
    else for (const issue of (Object.hasOwn(FcmApnsHeaderValues, header) ? FcmApnsHeaderValues[header] : undefined)?.safeParse(value).error?.issues ?? []) refuse(issue.message);
  }
});

/** FCM v1 `Message` fields in Google's wire shape (snake_case, ttl as "Ns"), merged into the message Herald builds. */
export const FcmOverride = z.strictObject({
  android: JsonObject.optional(),
  apns: z.strictObject({ headers: FcmApnsHeaders.optional(), payload: JsonObject.optional() }).optional(),
  webpush: JsonObject.optional(),
});
export type FcmOverride = z.infer<typeof FcmOverride>;
