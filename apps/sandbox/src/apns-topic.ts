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
 * uses the certificate's Subject as the default topic." Apple does not say which field of the
 * Subject; its push certificates name the bundle id as the Subject's `UID` and in its `CN`
 * ("Apple Push Services: <bundle id>", or "Apple Development IOS Push Services: ..."), so the
 * sandbox reads `UID`, else that `CN` (its own client certificate has only the `CN`). A Subject
 * naming neither gives no topic, and the request then needs `apns-topic`. The sandbox issues
 * single-topic certificates only.
 */
export function certificateTopic(subject: CertificateSubject | undefined): string | undefined {
  const uid = first(subject?.['UID'])?.trim();
  if (uid !== undefined && uid.length > 0) return uid;
  return /^Apple .*Push Services: (\S+)$/.exec(first(subject?.['CN'])?.trim() ?? '')?.[1];
}
