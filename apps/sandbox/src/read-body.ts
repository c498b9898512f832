import type { Readable } from 'node:stream';

/** Bodies beyond this are cut (the protocols' own limits are far lower; the length still shows). */
const MAX_STORED_BYTES = 1024 * 1024;

/** Read a request body; stops storing after 1 MiB but keeps draining. */
export function readBody(stream: Readable): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let stored = 0;
    stream.on('data', (chunk: Buffer) => {
      if (stored < MAX_STORED_BYTES) {
        chunks.push(chunk);
        stored += chunk.length;
      }
    });
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}
