/** Request headers as Node's HTTP/2 server hands them over (values decoded as Latin-1). */
export type Headers = Record<string, string | string[] | undefined>;

export interface ApnsRequest {
  method: string;
  path: string;
  headers: Headers;
  body: Buffer;
}

/** An APNs error answer: the status and Apple's `reason` string. */
export type ApnsRejection = { ok: false; status: number; reason: string };

export const reject = (status: number, reason: string): ApnsRejection => ({ ok: false, status, reason });

/**
 * A payload rule's outcome. Apple's response table lists no reason for breaking the `aps` content
 * rules, so a broken one is accepted and noted for the record.
 */
export interface ApsVerdict {
  warnings: string[];
}

/** The first value of a header, if present. */
export const header = (headers: Headers, name: string): string | undefined => {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
};
