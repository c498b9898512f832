import { createPrivateKey, sign } from 'node:crypto';
import { createLogger } from '@herald/logging';
import { describe, expect, it } from 'vitest';
import { verifyProviderToken } from './apns-jwt.ts';
import { CredentialRegistry } from './credential-registry.ts';
import { DeviceStore } from './device-store.ts';
import { handleFcmRequest } from './fcm-handler.ts';
import { FaultTable } from './faults.ts';
import { RecordStore } from './record-store.ts';

function providerToken(keyPem: string, keyId: string, teamId: string): string {
  const enc = (o: object): string => Buffer.from(JSON.stringify(o)).toString('base64url');
  const data = `${enc({ alg: 'ES256', kid: keyId })}.${enc({ iss: teamId, iat: Math.floor(Date.now() / 1000) })}`;
  const sig = sign('sha256', Buffer.from(data), { key: createPrivateKey(keyPem), dsaEncoding: 'ieee-p1363' });
  return `bearer ${data}.${sig.toString('base64url')}`;
}

describe('credential registry (POST /credentials)', () => {
  it('accepts tokens of every minted APNs key, each only with its own team id', () => {
    const registry = new CredentialRegistry();
    const a = registry.mintApnsKey();
    const b = registry.mintApnsKey('TEAMBBBBBB');
    expect(b.teamId).toBe('TEAMBBBBBB');
    expect(verifyProviderToken(providerToken(a.keyPem, a.keyId, a.teamId), registry)).toMatchObject({ ok: true });
    expect(verifyProviderToken(providerToken(b.keyPem, b.keyId, b.teamId), registry)).toMatchObject({ ok: true });
    expect(verifyProviderToken(providerToken(a.keyPem, a.keyId, b.teamId), registry)).toEqual({ ok: false, reason: 'InvalidProviderToken' });
    expect(verifyProviderToken(providerToken(a.keyPem, b.keyId, b.teamId), registry)).toEqual({ ok: false, reason: 'InvalidProviderToken' });
  });

  it("lets an FCM access token send only to its own project", async () => {
    const registry = new CredentialRegistry();
    const p = registry.mintFcmProject('proj-a');
    const q = registry.mintFcmProject();
    const ctx = { faults: new FaultTable(), records: new RecordStore(10), devices: new DeviceStore(10), logger: createLogger({ service: 'spec', level: 'silent', format: 'json' }) };
    const send = (project: string, token: string) =>
      handleFcmRequest(
        { method: 'POST', path: `/v1/projects/${project}/messages:send`, headers: { authorization: `Bearer ${token}` }, body: Buffer.from(JSON.stringify({ message: { token: 'device' } })) },
        { projectId: 'herald-sandbox', accessToken: 'ya29.default', projects: registry },
        ctx,
      );
    expect((await send('proj-a', p.accessToken)).answer.status).toBe(200);
    expect((await send('proj-a', p.accessToken)).answer.body).toContain('projects/proj-a/messages/');
    expect((await send('proj-a', q.accessToken)).answer.status).toBe(403);
    expect((await send('proj-a', 'ya29.unknown')).answer.status).toBe(401);
    expect((await send('herald-sandbox', 'ya29.default')).answer.status).toBe(200);
  });
});
