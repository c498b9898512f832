import { invalidForFcm, type FcmProblem } from './fcm-fields.ts';

/** FCM registration tokens are made of letters, digits, `-`, `_` and `:` (no spaces, slashes, dots). */
export const isFcmRegistrationToken = (token: string): boolean => /^[A-Za-z0-9_:-]+$/.test(token);

/**
 * Google's answer for a token that cannot be one, as the ErrorCode page's second example gives it:
 * INVALID_ARGUMENT with this text and the FcmError detail, no BadRequest (which clients such as
 * Herald read as a dead token).
 */
export const invalidRegistrationToken = (): FcmProblem => invalidForFcm('The registration token is not a valid FCM registration token');
