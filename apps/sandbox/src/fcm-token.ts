import { invalid, type FcmProblem } from './fcm-fields.ts';

/** FCM registration tokens are made of letters, digits, `-`, `_` and `:` (no spaces, slashes, dots). */
export const isFcmRegistrationToken = (token: string): boolean => /^[A-Za-z0-9_:-]+$/.test(token);

/**
 * Google's answer for a token that cannot be one: INVALID_ARGUMENT with this text (which clients
 * such as Herald read as a dead token).
 */
export const invalidRegistrationToken = (): FcmProblem => invalid('The registration token is not a valid FCM registration token');
