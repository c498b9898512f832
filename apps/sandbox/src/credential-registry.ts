import { createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import type { ProviderTokenKey } from './apns-jwt.ts';

export interface MintedApnsKey {
  keyId: string;
  teamId: string;
  /** The .p8 (PKCS#8 PEM) a provider signs its tokens with. */
  keyPem: string;
}

export interface MintedFcmProject {
  projectId: string;
  accessToken: string;
}

const appleId = (): string => {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  return [...randomBytes(10)].map((b) => alphabet[b % alphabet.length]).join('');
};

/**
 * Every APNs signing key and FCM project the sandbox accepts: its own (from the state dir) plus
 * any minted at run time through `POST /credentials`, so tests can give each app its own
 * credentials and check which were used. Minted credentials live in memory only.
 */
export class CredentialRegistry {
  private readonly apnsKeys = new Map<string, ProviderTokenKey>();
  private readonly fcmTokens = new Map<string, string>();

  addApnsKey(key: ProviderTokenKey): void {
    this.apnsKeys.set(key.keyId, key);
  }

  find(keyId: string): ProviderTokenKey | undefined {
    return this.apnsKeys.get(keyId);
  }

  addFcmProject(projectId: string, accessToken: string): void {
    this.fcmTokens.set(accessToken, projectId);
  }

  /** The project an access token belongs to, or undefined for a token the sandbox never issued. */
  projectOfToken(accessToken: string | undefined): string | undefined {
    return accessToken === undefined ? undefined : this.fcmTokens.get(accessToken);
  }

  mintApnsKey(teamId = appleId()): MintedApnsKey {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const keyId = appleId();
    this.addApnsKey({ keyId, teamId, publicKey: createPublicKey(keyPem) });
    return { keyId, teamId, keyPem };
  }

  mintFcmProject(projectId = `herald-sandbox-${randomBytes(4).toString('hex')}`): MintedFcmProject {
    const accessToken = `ya29.sandbox-${randomBytes(24).toString('base64url')}`;
    this.addFcmProject(projectId, accessToken);
    return { projectId, accessToken };
  }
}
