/** FCM v1 error codes (FcmError.errorCode) the sandbox can answer with. */
export const FcmErrorCodes = ['UNREGISTERED', 'INVALID_ARGUMENT', 'QUOTA_EXCEEDED', 'UNAVAILABLE', 'INTERNAL', 'SENDER_ID_MISMATCH', 'THIRD_PARTY_AUTH_ERROR'] as const;
export type FcmErrorCode = (typeof FcmErrorCodes)[number];

/** Google API errors that carry no FcmError detail (authentication, wrong project, wrong path). */
export type GoogleOnlyCode = 'UNAUTHENTICATED' | 'PERMISSION_DENIED' | 'NOT_FOUND' | 'METHOD_NOT_ALLOWED';

export interface GoogleError {
  status: number;
  body: { error: { code: number; message: string; status: string; details?: object[] } };
}

const FCM: Record<FcmErrorCode, { status: number; grpc: string; message: string }> = {
  UNREGISTERED: { status: 404, grpc: 'NOT_FOUND', message: 'Requested entity was not found.' },
  INVALID_ARGUMENT: { status: 400, grpc: 'INVALID_ARGUMENT', message: 'The registration token is not a valid FCM registration token' },
  QUOTA_EXCEEDED: { status: 429, grpc: 'RESOURCE_EXHAUSTED', message: 'Quota exceeded for quota metric \'Send requests\' of service \'fcm.googleapis.com\'.' },
  UNAVAILABLE: { status: 503, grpc: 'UNAVAILABLE', message: 'The service is currently unavailable.' },
  INTERNAL: { status: 500, grpc: 'INTERNAL', message: 'Internal error encountered.' },
  SENDER_ID_MISMATCH: { status: 403, grpc: 'PERMISSION_DENIED', message: 'SenderId mismatch' },
  THIRD_PARTY_AUTH_ERROR: { status: 401, grpc: 'UNAUTHENTICATED', message: 'Auth error from APNS or Web Push Service' },
};

const GOOGLE: Record<GoogleOnlyCode, { status: number; message: string }> = {
  UNAUTHENTICATED: {
    status: 401,
    message:
      'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
  },
  PERMISSION_DENIED: { status: 403, message: "Permission 'cloudmessaging.messages.create' denied on resource (or it may not exist)." },
  NOT_FOUND: { status: 404, message: 'Requested entity was not found.' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'Method not allowed.' },
};

/**
 * Google's answer to a request with a bad value: 400 INVALID_ARGUMENT whose detail is a
 * `google.rpc.BadRequest` naming the field, as in the ErrorCode page's first example ("Invalid value
 * at 'message.data[0].value' (TYPE_STRING), 12", field `message.data[0].value`): "the details array
 * contains values of different types. The first example has type type.googleapis.com/google.rpc.BadRequest
 * indicating an error in request values. The second example with type
 * type.googleapis.com/google.firebase.fcm.v1.FcmError has an FCM specific error" (a bad token).
 */
export function badRequest(description: string, field?: string): GoogleError {
  const violation = field === undefined ? { description } : { field, description };
  const details = [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [violation] }];
  return { status: 400, body: { error: { code: 400, message: description, status: 'INVALID_ARGUMENT', details } } };
}

/**
 * An error in Google's format; FCM codes carry the `google.firebase.fcm.v1.FcmError` detail, and a
 * QUOTA_EXCEEDED given `quota` the `google.rpc.QuotaFailure` that "specifies which quota was
 * exceeded" (ErrorCode; the violation's words are the page's, Google does not document its strings).
 */
export function googleError(code: FcmErrorCode | GoogleOnlyCode, message?: string, quota?: 'message' | 'device'): GoogleError {
  if (code in FCM) {
    const e = FCM[code as FcmErrorCode];
    const details: object[] = [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: code }];
    if (code === 'QUOTA_EXCEEDED' && quota !== undefined) {
      details.push({ '@type': 'type.googleapis.com/google.rpc.QuotaFailure', violations: [{ description: quota === 'device' ? 'exceeded device message rate quota' : 'exceeded message rate quota' }] });
    }
    return { status: e.status, body: { error: { code: e.status, message: message ?? e.message, status: e.grpc, details } } };
  }
  const g = GOOGLE[code as GoogleOnlyCode];
  const status = code === 'METHOD_NOT_ALLOWED' ? 'INVALID_ARGUMENT' : code;
  return { status: g.status, body: { error: { code: g.status, message: message ?? g.message, status } } };
}
