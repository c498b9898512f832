import type { Sandbox } from '@herald/sandbox';

export interface SandboxRecord {
  seq: number;
  platform: 'apns' | 'fcm';
  receivedAt: string;
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  status: number;
  response: unknown;
}

/** Read what the sandbox received, through its control API (as an operator would). */
export async function sandboxRecords(sandbox: Sandbox, query: { platform?: string; token?: string } = {}): Promise<SandboxRecord[]> {
  const params = new URLSearchParams({ limit: '100000', ...query });
  const res = await fetch(`${sandbox.settings.control.url}/records?${params}`);
  if (!res.ok) throw new Error(`sandbox records: ${res.status}`);
  return (await res.json()) as SandboxRecord[];
}

/** Records the provider accepted (status 200). */
export async function delivered(sandbox: Sandbox, query: { platform?: string; token?: string } = {}): Promise<SandboxRecord[]> {
  return (await sandboxRecords(sandbox, query)).filter((r) => r.status === 200);
}

export async function injectFault(sandbox: Sandbox, fault: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${sandbox.settings.control.url}/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(fault),
  });
  if (!res.ok) throw new Error(`sandbox fault: ${res.status} ${await res.text()}`);
}
