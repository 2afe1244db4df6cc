/**
 * Slow clients, as an attacker on loopback opens them: many TCP connections from several source
 * addresses (127.0.0.2 and up: every 127.x address is this host), each sending its request a
 * byte at a time, its headers or, after whole headers, its body. Also a request whose headers are
 * sent whole and whose body is never sent, to see what the server answers from its headers alone.
 */
import { connect, type Socket } from 'node:net';

/** One slow request: its head (request line and headers, without the blank line) and the length its body declares. */
export interface SlowRequest {
  readonly head: string;
  /** Declared as `content-length`; its bytes are sent one a tick after the head. */
  readonly bodyLength: number;
  /** The head too is sent a byte a tick (else whole, at once). */
  readonly slowHead?: boolean;
}

/** Slow connections held open. */
export interface SlowClients {
  /** Connections still open (of those whose index `which` takes, all by default). */
  open(which?: (i: number) => boolean): number;
  /** Connections the server closed. */
  closed(): number;
  /** Bytes sent so far, over all connections. */
  sent(): number;
  /** Stops sending (the connections stay open). */
  pause(): void;
  /** Closes every connection. */
  close(): Promise<void>;
}

/**
 * Opens `count` connections to `url`'s host and port from `sources` addresses (127.0.0.2, 127.0.0.3, ...),
 * `perBatch` at a time, each sending `request(i)` a byte every `tickMs`.
 */
export async function openSlowClients(url: string, count: number, request: (i: number) => SlowRequest, options: { readonly sources: number; readonly tickMs: number; readonly perBatch?: number }): Promise<SlowClients> {
  const { hostname, port } = new URL(url);
  const clients: { socket: Socket; bytes: Buffer; at: number }[] = [];
  let closed = 0;
  let sent = 0;
  const opened: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const r = request(i);
    const head = Buffer.from(`${r.head}\r\ncontent-length: ${r.bodyLength}\r\n\r\n`);
    const bytes = Buffer.concat([head, Buffer.alloc(r.bodyLength, 0x20)]);
    const socket = connect({ host: hostname, port: Number(port), localAddress: `127.0.0.${2 + (i % options.sources)}` });
    socket.setNoDelay(true);
    socket.on('error', () => undefined);
    socket.once('close', () => closed++);
    opened.push(new Promise((resolve) => socket.once('connect', () => resolve()).once('close', () => resolve())));
    const client = { socket, bytes, at: 0 };
    if (r.slowHead !== true) {
      socket.write(head);
      client.at = head.length;
      sent += head.length;
    }
    clients.push(client);
    if ((i + 1) % (options.perBatch ?? 100) === 0) await Promise.all(opened.splice(0));
  }
  await Promise.all(opened);
  const timer = setInterval(() => {
    for (const c of clients) {
      if (c.socket.destroyed || c.at >= c.bytes.length) continue;
      c.socket.write(c.bytes.subarray(c.at, c.at + 1));
      c.at++;
      sent++;
    }
  }, options.tickMs);
  return {
    open: (which = () => true) => clients.filter((c, i) => which(i) && !c.socket.destroyed).length,
    closed: () => closed,
    sent: () => sent,
    pause: () => clearInterval(timer),
    close: async () => {
      clearInterval(timer);
      await Promise.all(clients.map((c) => new Promise<void>((resolve) => (c.socket.destroyed ? resolve() : c.socket.once('close', () => resolve()).destroy()))));
    },
  };
}

/**
 * Sends `head` with `content-length: bodyLength` and no body, and resolves with the status the
 * server answers from the headers alone, and whether it then closed the connection; rejects when
 * no answer comes within `timeoutMs` (it waited for the body).
 */
export function answerToHeadOnly(url: string, head: string, bodyLength: number, timeoutMs = 3000): Promise<{ status: number; closed: boolean }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    let text = '';
    let status = 0;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer to a body never sent within ${timeoutMs} ms (${head.split('\r\n')[0]})`));
    }, timeoutMs);
    socket.on('error', () => undefined);
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
      status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
    });
    socket.once('close', () => {
      clearTimeout(timer);
      if (status === 0) reject(new Error(`closed without an answer (${head.split('\r\n')[0]})`));
      else resolve({ status, closed: true });
    });
    socket.write(`${head}\r\ncontent-length: ${bodyLength}\r\n\r\n`);
  });
}
