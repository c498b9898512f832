import { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';

/**
 * firebase-admin 13.x sends its HTTP/2 requests (sendEach, sendEachForMulticast) with the
 * pseudo-header `:scheme: https:` — the URL's protocol, colon included. Google's front ends accept
 * it; Node's HTTP/2 server (nghttp2, which checks the scheme's characters and has no switch for it)
 * resets the stream with PROTOCOL_ERROR. The sandbox must accept what Google accepts, so the FCM
 * server reads HTTP/2 connections through this filter: in HEADERS and CONTINUATION frames from the
 * client it replaces the HPACK string "https:" by "httpsB" — same length, and Huffman-coded the
 * same number of bits (':' and 'B' are both 7-bit codes one bit apart), so frame lengths and the
 * HPACK dynamic table's sizes stay exactly what the client computed. Every other byte passes as is.
 */

const PREFACE_LENGTH = 24; // "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
const FRAME_HEADER = 9;
const HEADERS = 0x1;
const CONTINUATION = 0x9;

/** RFC 7541 Appendix B codes of the characters involved. */
const HUFFMAN: Record<string, [code: number, bits: number]> = {
  h: [0x27, 6],
  t: [0x9, 5],
  p: [0x2b, 6],
  s: [0x8, 5],
  ':': [0x5c, 7],
  B: [0x5d, 7],
};

function huffman(text: string): Buffer {
  let acc = 0n;
  let bits = 0;
  for (const c of text) {
    const [code, n] = HUFFMAN[c] ?? [0, 0];
    acc = (acc << BigInt(n)) | BigInt(code);
    bits += n;
  }
  const pad = (8 - (bits % 8)) % 8;
  acc = (acc << BigInt(pad)) | ((1n << BigInt(pad)) - 1n); // padded with the EOS prefix (all ones)
  const bytes = (bits + pad) / 8;
  return Buffer.from(acc.toString(16).padStart(bytes * 2, '0'), 'hex');
}

/** A string literal as HPACK writes it: length prefix (H bit for Huffman), then the octets. */
const literal = (octets: Buffer, huffmanCoded: boolean): Buffer => Buffer.concat([Buffer.from([(huffmanCoded ? 0x80 : 0) | octets.length]), octets]);

const REWRITES: [from: Buffer, to: Buffer][] = [
  [literal(huffman('https:'), true), literal(huffman('httpsB'), true)],
  [literal(Buffer.from('https:'), false), literal(Buffer.from('httpsB'), false)],
];

/** Rewrite the header block fragment in place. */
function rewriteHeaderBlock(payload: Buffer): void {
  for (const [from, to] of REWRITES) {
    for (let at = payload.indexOf(from); at !== -1; at = payload.indexOf(from, at + from.length)) to.copy(payload, at);
  }
}

/** Client → server bytes of one HTTP/2 connection, with header blocks rewritten frame by frame. */
export class SchemeFilter {
  private pending: Buffer = Buffer.alloc(0);
  private prefaceLeft = PREFACE_LENGTH;

  push(chunk: Buffer): Buffer {
    let buf = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const out: Buffer[] = [];
    if (this.prefaceLeft > 0) {
      const n = Math.min(this.prefaceLeft, buf.length);
      out.push(buf.subarray(0, n));
      buf = buf.subarray(n);
      this.prefaceLeft -= n;
    }
    let at = 0;
    while (buf.length - at >= FRAME_HEADER) {
      const length = buf.readUIntBE(at, 3);
      const type = buf[at + 3];
      const end = at + FRAME_HEADER + length;
      if (end > buf.length) break;
      if (type === HEADERS || type === CONTINUATION) rewriteHeaderBlock(buf.subarray(at + FRAME_HEADER, end));
      at = end;
    }
    out.push(buf.subarray(0, at));
    this.pending = Buffer.from(buf.subarray(at));
    return out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out);
  }
}

/** The TLS socket as a Duplex whose readable side went through a SchemeFilter; what is written goes to the socket. */
export function lenientSchemeSocket(socket: TLSSocket): Duplex {
  const filter = new SchemeFilter();
  const duplex = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _encoding, callback) {
      socket.write(chunk, callback);
    },
    final(callback) {
      socket.end(callback);
    },
    destroy(err, callback) {
      socket.destroy(err ?? undefined);
      callback(err);
    },
  });
  socket.on('data', (chunk: Buffer) => {
    if (!duplex.push(filter.push(chunk))) socket.pause();
  });
  socket.on('end', () => duplex.push(null));
  socket.on('error', (err) => duplex.destroy(err));
  socket.on('close', () => duplex.destroy());
  // What Node's HTTP/2 server reads off the socket it is given.
  Object.assign(duplex, { alpnProtocol: socket.alpnProtocol, encrypted: true, remoteAddress: socket.remoteAddress, remotePort: socket.remotePort });
  return duplex;
}
