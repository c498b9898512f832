import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The sandbox's Web Push origin and its CA (`web` in `<stateDir>/sandbox.json`), trusted for that
 * origin only; empty when there is no sandbox (or an older one without a Web Push service).
 */
export async function loadSandboxWebTrust(stateDir: string): Promise<Array<{ host: string; port: number; ca: string }>> {
  let file: { web?: { host?: unknown; port?: unknown; caFile?: unknown } };
  try {
    file = JSON.parse(await readFile(join(stateDir, 'sandbox.json'), 'utf8')) as typeof file;
  } catch {
    return [];
  }
  const web = file.web;
  if (typeof web?.host !== 'string' || typeof web.port !== 'number' || typeof web.caFile !== 'string') return [];
  return [{ host: web.host, port: web.port, ca: await readFile(web.caFile, 'utf8') }];
}
