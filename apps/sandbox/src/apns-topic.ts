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

/** A certificate Subject as Node's TLS socket hands it over (`getPeerCertificate().subject`). */
export type CertificateSubject = Readonly<Record<string, string | string[] | undefined>>;

const first = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/**
 * The default topic of a certificate-authenticated connection. Apple, `apns-topic`: "If you omit
 * this request header and your APNs certificate does not specify multiple topics, the APNs server
 * uses the certificate's Subject as the default topic"; MissingTopic: "mandatory when the client
 * is connected using a certificate that supports multiple topics". Apple's current certificate,
 * "Apple Push Notification service SSL (Sandbox & Production)" (CN "Apple Push Services: <bundle
 * id>"), covers the app, its VoIP and its complication pushes: several topics, so no default (the
 * sandbox's own client certificate is of that kind). Apple's single-topic ones (the older
 * "Apple Development|Production IOS Push Services", VoIP Services, WatchKit Services, Pass Type ID,
 * Website Push ID) name their topic in the Subject's `UID`; without one, the bundle id of a CN
 * "… Push Services: <bundle id>".
 */
export function certificateTopic(subject: CertificateSubject | undefined): string | undefined {
  const cn = first(subject?.['CN'])?.trim() ?? '';
  if (/^Apple Push Services:/i.test(cn)) return undefined;
  const uid = first(subject?.['UID'])?.trim();
  return uid !== undefined && uid.length > 0 ? uid : /Push Services: (\S+)$/.exec(cn)?.[1];
}
