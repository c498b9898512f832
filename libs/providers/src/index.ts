// Pure helpers: no client library is loaded by importing this index.
export { isRefusal, type Prepared, type PushProvider, type Refusal, type SendResult, type SendTarget } from './push-provider.ts';
export type { ApnsSettings, FcmSettings } from './settings.ts';
export type { VapidCredentials, VapidKeyPair, WebPushSettings } from './web-settings.ts';
export { buildWebPayload, buildWebRequest, type WebPushPayload } from './web-payload.ts';
export { WEB_PUSH_DEFAULT_TTL_S, webRequestProblem, webTopic, webTtlSeconds, webUrgency, type WebPushRequest } from './web-rules.ts';
export { classifyWebPushAnswer, type WebPushAnswer } from './web-classify.ts';
export { asProcessRefusal, type SigningKey } from './web-signing-key.ts';
export { buildApnsNotification, apnsRequestParts, isBackgroundPush, type ApnsRequestParts } from './apns-notification.ts';
export { buildFcmMessage, fcmTtlSeconds, type FcmMessage } from './fcm-message.ts';
export { APNS_MAX_PAYLOAD_BYTES, APNS_MAX_VOIP_PAYLOAD_BYTES, HERALD_MAX_STORAGE_S, apnsTopicFor, apnsRequestProblem, suffixedTopicWarning } from './apns-rules.ts';
export { FCM_MAX_PAYLOAD_BYTES, FCM_MAX_TTL_S, fcmMessageProblem } from './fcm-rules.ts';
export { appConformanceIssues, entryConformanceIssues, jobConformanceIssues, jobNotices, platformsFor, webConformanceIssues, pushProblem, type ConformanceIssue, type ConformanceScope } from './push-conformance.ts';
export { classifyApnsFailure, type ApnsFailure } from './apns-classify.ts';
export { classifyFcmError, type FcmFailure } from './fcm-classify.ts';
export { loadSandboxSettings, loadSandboxCertificateAuth, SANDBOX_DEFAULT_TOPIC } from './sandbox-settings.ts';
export { loadSandboxWebTrust } from './web-sandbox.ts';
// Factories: each loads its client library (@parse/node-apn, firebase-admin) on first call.
export { createApnsProvider } from './apns-provider.ts';
export { createFcmProvider } from './fcm-provider.ts';
export { createWebPushProvider } from './web-push-provider.ts';
export { createUncredentialedProvider } from './uncredentialed-provider.ts';
export { generateVapidKeys } from './web-vapid-keys.ts';
