/**
 * Park codes that mean "this message itself can never succeed": replaying it unchanged would only
 * park it again (or, for a provider's or receiver's rejection, send a request already answered
 * "no" for good). A replay leaves these parked unless forced, and says why. Every other code
 * (unknown-app, app-disabled, app-banned, no-apns-topic, subscription-disabled, retries-exhausted,
 * delivery-limit, …) names a condition an operator can fix, after which a replay is the remedy.
 */
export const PERMANENT_PARK_CODES: Readonly<Record<string, string>> = {
  'malformed-json': 'its body is not valid JSON, so it would be parked again',
  schema: 'it breaks its message contract, so it would be parked again',
  'bad-schedule': 'its schedule (deliverAt) is impossible or beyond the horizon, so it would be parked again',
  'payload-too-large': "its content is over the provider's size limit, so it would be parked again",
  'provider-rules': "its content breaks Apple's or Google's documented rules, so it would be parked again",
  'provider-rejected':
    "the provider rejected this push for good; the same request gets the same answer (force it only after fixing the cause, e.g. the app's credentials or topic)",
  'receiver-rejected':
    'the webhook receiver refused it with an answer that is not retried; the same request gets the same answer',
  'wrong-platform': "it was published to the other platform's queue, so it would be parked again",
  'unknown-resource-type':
    'its resource type is not in WEBHOOK_RESOURCE_TYPES, so it would be parked again (force it after adding the type)',
  'job-id-conflict': "its job id is another app's job's, so it would be parked again: its publisher must send it under a new id",
  'job-id-reused': 'its job id was used before for other content, so it would be parked again: its publisher must send it under a new id',
};

/** Why a message parked with this code is not replayed without force, or undefined when a replay may help. */
export const permanentRejection = (code: string | undefined): string | undefined =>
  code === undefined ? undefined : PERMANENT_PARK_CODES[code];

/** One sentence for an operator: what a replay left parked and why (empty when nothing was refused). */
export function describeRefusals(
  refused: ReadonlyArray<{ code: string; count: number; why: string; messageIds: readonly string[] }>,
): string {
  if (refused.length === 0) return '';
  const total = refused.reduce((n, r) => n + r.count, 0);
  const parts = refused.map(
    (r) =>
      `${r.count} parked as "${r.code}" (${r.why}${r.messageIds.length > 0 ? `; e.g. ${r.messageIds.slice(0, 3).join(', ')}` : ''})`,
  );
  return `refused to replay ${total} permanent rejection(s), left parked: ${parts.join('; ')}. Replay with force to send them anyway.`;
}
