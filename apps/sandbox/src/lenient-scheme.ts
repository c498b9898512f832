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
 *
 * The filter turns the connection into a JavaScript stream, which halves what the server can
 * answer, so only connections that need it get it: `sniffScheme` reads a connection's first
 * header block and passes the socket on untouched unless that block carries the "https:" literal
 * (a client sends the same scheme with every request, and later requests refer to the first one's).
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

const hasRewrite = (block: Buffer): boolean => REWRITES.some(([from]) => block.includes(from));

const END_HEADERS = 0x4;

/**
 * Whether the client's first header block (preface, then frames up to the HEADERS frame and its
 * CONTINUATIONs) carries the "https:" literal: undefined while `head` holds less than that block.
 */
export function firstBlockNeedsRewrite(head: Buffer): boolean | undefined {
  let at = PREFACE_LENGTH;
  let inBlock = false;
  while (head.length - at >= FRAME_HEADER) {
    const length = head.readUIntBE(at, 3);
    const type = head[at + 3];
    const flags = head[at + 4] ?? 0;
    const end = at + FRAME_HEADER + length;
    if (end > head.length) return undefined;
    const payload = head.subarray(at + FRAME_HEADER, end);
    if (type === HEADERS || (inBlock && type === CONTINUATION)) {
      if (hasRewrite(payload)) return true;
      if ((flags & END_HEADERS) !== 0) return false;
      inBlock = true;
    }
    at = end;
  }
  return undefined;
}

/** How long to wait for the first header block, and how many bytes, before deciding without it. */
const SNIFF_TIMEOUT_MS = 250;
const SNIFF_MAX_BYTES = 256 * 1024;

/**
 * Read an HTTP/2 connection's first header block, put the bytes back, and hand on the socket as it
 * is, or through the filter when the block carries "https:". A client that sends no request within
 * SNIFF_TIMEOUT_MS connected ahead of its requests (Herald's providers connect when they are made);
 * firebase-admin's transport connects for a request and sends it at once, so such a connection goes
 * on unfiltered (before, it was filtered: every FCM push of a warmed-up pusher then went through the
 * JavaScript stream). Past SNIFF_MAX_BYTES without a header block it is filtered, which is always
 * correct, only slower. Node's HTTP/2 session reads bytes already buffered on its socket before its own.
 */
export function sniffScheme(socket: TLSSocket, handOn: (socket: TLSSocket | Duplex, filtered: boolean) => void): void {
  let head = Buffer.alloc(0);
  let decided = false;
  const decide = (rewrite: boolean): void => {
    if (decided) return;
    decided = true;
    clearTimeout(timer);
    socket.off('data', onData);
    socket.off('end', onGone);
    socket.off('error', onGone);
    socket.pause();
    if (head.length > 0) socket.unshift(head);
    handOn(rewrite ? lenientSchemeSocket(socket) : socket, rewrite);
  };
  const onData = (chunk: Buffer): void => {
    head = Buffer.concat([head, chunk]);
    const rewrite = firstBlockNeedsRewrite(head);
    if (rewrite !== undefined) decide(rewrite);
    else if (head.length > SNIFF_MAX_BYTES) decide(true);
  };
  const onGone = (): void => {
    decided = true;
    clearTimeout(timer);
    socket.destroy();
  };
  const timer = setTimeout(() => decide(false), SNIFF_TIMEOUT_MS);
  socket.on('data', onData);
  socket.once('end', onGone);
  socket.once('error', onGone);
}

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
