import { randomBytes } from 'node:crypto';
import { bearerToken } from './apns-jwt.ts';
import { header, type Headers } from './apns-request.ts';
import { json, sleep, type Answer, type Handled, type SandboxContext } from './exchange.ts';
import type { Fault } from './faults.ts';
import { badRequest, googleError, type FcmErrorCode, type GoogleError } from './google-errors.ts';
import { validateFcmBody } from './fcm-validation.ts';

export interface FcmIncoming {
  method: string;
  path: string;
  headers: Headers;
  body: Buffer;
}

export interface FcmExpectations {
  projectId: string;
  accessToken: string;
  /** Further projects (minted through POST /credentials): the project each access token belongs to. */
  projects?: { projectOfToken(accessToken: string | undefined): string | undefined };
}

function projectOfToken(expected: FcmExpectations, accessToken: string | undefined): string | undefined {
  if (accessToken === expected.accessToken) return expected.projectId;
  return expected.projects?.projectOfToken(accessToken);
}

const toAnswer = (e: GoogleError, extra: Record<string, string> = {}): Answer => json(e.status, e.body, extra);

function faultAnswer(fault: Fault): Answer | undefined {
  if (fault.error === undefined) return undefined;
  const retry: Record<string, string> = fault.retryAfterSeconds !== undefined ? { 'retry-after': String(fault.retryAfterSeconds) } : {};
  return toAnswer(googleError(fault.error as FcmErrorCode, undefined, fault.quota), retry);
}

function parseJson(body: Buffer): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, value: JSON.parse(body.toString('utf8')) as unknown };
  } catch (err) {
    return { ok: false, message: `Invalid JSON payload received. ${(err as Error).message}` };
  }
}

const refused = (token: string | undefined, e: GoogleError): Handled => ({ token, answer: toAnswer(e), warnings: [], deliver: false });

/** Authenticate, validate, apply any injected fault, and answer as the FCM v1 API would. */
export async function handleFcmRequest(req: FcmIncoming, expected: FcmExpectations, ctx: SandboxContext): Promise<Handled> {
  const match = /^\/v1\/projects\/([^/]+)\/messages:send$/.exec(req.path.split('?')[0] ?? '');
  if (match === null) return refused(undefined, googleError('NOT_FOUND', `The requested URL ${req.path} was not found on this server.`));
  if (req.method !== 'POST') return refused(undefined, googleError('METHOD_NOT_ALLOWED'));
  const tokenProject = projectOfToken(expected, bearerToken(header(req.headers, 'authorization')));
  if (tokenProject === undefined) return refused(undefined, googleError('UNAUTHENTICATED'));
  if (match[1] !== tokenProject) {
    const message = `Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/${match[1] ?? ''}' (or it may not exist).`;
    return refused(undefined, googleError('PERMISSION_DENIED', message));
  }
  const parsed = parseJson(req.body);
  if (!parsed.ok) return refused(undefined, badRequest(parsed.message));
  const valid = validateFcmBody(parsed.value);
  if (!valid.ok) return refused(claimedToken(parsed.value), valid.error);
  const fault = ctx.faults.take('fcm', valid.token);
  if (fault?.delayMs !== undefined) await sleep(fault.delayMs);
  const answer = (fault && faultAnswer(fault)) ?? json(200, { name: `projects/${tokenProject}/messages/${messageId(valid.validateOnly)}` });
  return { token: valid.token, answer, warnings: valid.warnings, deliver: answer.status === 200 && !valid.validateOnly };
}

/** The `message.token` of a body that failed validation, so the rejection is still findable by token. */
function claimedToken(body: unknown): string | undefined {
  const message = (body as { message?: { token?: unknown } } | null)?.message;
  return typeof message?.token === 'string' ? message.token : undefined;
}

/** This process's half of every message id (random), the other half a counter: unique without randomness per answer. */
const ID_PREFIX = randomBytes(4).toString('hex');
let idCounter = 0;

/** FCM message ids look like `0:1700000000000000%31bd1c9631bd1c96`; validate_only answers `fake_message_id`. */
function messageId(validateOnly: boolean): string {
  if (validateOnly) return 'fake_message_id';
  idCounter = (idCounter + 1) % 0x100000000;
  return `0:${Date.now()}${String(Math.floor(Math.random() * 1000)).padStart(3, '0')}%${ID_PREFIX}${idCounter.toString(16).padStart(8, '0')}`;
}
