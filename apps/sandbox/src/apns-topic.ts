/**
 * The `apns-topic` suffix each push type needs. Apple, "Sending notification requests to APNs",
 * `apns-push-type` table: "If you set this push type, the apns-topic header field must use your
 * app's bundle ID with .voip appended to the end" (.complication, .pushkit.fileprovider,
 * .location-query, .push-type.liveactivity, .voip-ptt likewise). `alert` and `background` use
 * the bundle ID itself. `mdm`, `widgets` and `controls` are not checked here.
 */
export const TOPIC_SUFFIX: Readonly<Record<string, string>> = {
  voip: '.voip',
  complication: '.complication',
  fileprovider: '.pushkit.fileprovider',
  location: '.location-query',
  liveactivity: '.push-type.liveactivity',
  pushtotalk: '.voip-ptt',
};

const SUFFIXES = Object.values(TOPIC_SUFFIX);

/**
 * Whether `topic` is the right kind of topic for `pushType`: a push type with a suffix needs a
 * topic `<bundle><suffix>`, and a topic with one of those suffixes takes only its own push type.
 * Without an `apns-push-type` header nothing is checked (Apple infers the type, as before iOS 13).
 * Apple documents the suffixes but not which reason a mismatch earns (its table has BadTopic,
 * TopicDisallowed, DeviceTokenNotForTopic); the sandbox answers TopicDisallowed.
 */
export function topicFitsPushType(topic: string, pushType: string | undefined): boolean {
  if (pushType === undefined) return true;
  const needed = TOPIC_SUFFIX[pushType];
  if (needed !== undefined) return topic.endsWith(needed) && topic.length > needed.length;
  return !SUFFIXES.some((suffix) => topic.endsWith(suffix));
}
