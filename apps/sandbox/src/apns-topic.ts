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

/**
 * Whether `topic` is the right kind of topic for `pushType`: a push type with a suffix needs a
 * topic `<bundle><suffix>`. Without an `apns-push-type` header nothing is checked (Apple infers the
 * type, as before iOS 13). An `alert` or `background` push goes to the bundle id itself, and a
 * bundle id may end like a suffix (`com.acme.voip`): Apple tells the two apart by the team's bundle
 * ids, which the sandbox does not know, so it refuses no topic for them.
 * Apple documents the suffixes but not which reason a mismatch earns (its table has BadTopic,
 * TopicDisallowed, DeviceTokenNotForTopic); the sandbox answers TopicDisallowed.
 */
export function topicFitsPushType(topic: string, pushType: string | undefined): boolean {
  const needed = pushType === undefined ? undefined : TOPIC_SUFFIX[pushType];
  return needed === undefined || (topic.endsWith(needed) && topic.length > needed.length);
}
