/**
 * The bounds of createHttpApp's connections and bodies, each with a small value on a loopback
 * server in this process: the caps per source address and per process, the headers, request and
 * keep-alive timeouts, and the budget of bodies being received.
 */
import { connect, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpApp, listen } from '../../src/net/http-app.js';
import { addBinaryParser } from '../../src/net/raw-body.js';
import type { ConnectionLimits } from '../../src/net/connection-limits.js';

let app: FastifyInstance | undefined;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await app?.close();
  app = undefined;
});

async function start(limits: Partial<ConnectionLimits>): Promise<{ port: number }> {
  app = createHttpApp(undefined, undefined, limits);
  app.post('/echo', async (request) => ({ got: request.body }));
  app.get('/ok', async () => ({ ok: true }));
  addBinaryParser(app, 'application/octet-stream');
  app.post('/bytes', async (request) => {
    const b = request.body as Uint8Array;
    return { length: b.byteLength, sum: b.reduce((s, x) => (s * 31 + x) >>> 0, 7) };
  });
  const url = await listen(app, '127.0.0.1', 0);
  return { port: Number(new URL(url).port) };
}

/** A connection from `source`; resolves once connected, with what it reads and whether it closed. */
async function open(port: number, source = '127.0.0.1'): Promise<{ socket: Socket; text: () => string; closed: () => boolean; ended: Promise<void> }> {
  const socket = connect({ host: '127.0.0.1', port, localAddress: source });
  sockets.push(socket);
  let text = '';
  let closed = false;
  socket.on('error', () => undefined);
  socket.setEncoding('utf8').on('data', (c: string) => (text += c));
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  void ended.then(() => (closed = true));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()).once('close', () => resolve()));
  return { socket, text: () => text, closed: () => closed, ended };
}

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const postHead = (length: number): string => `POST /echo HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;

describe('createHttpApp connections', () => {
  it('closes a connection past the cap of its source address, and past the process cap, at once', async () => {
    const { port } = await start({ maxConnectionsPerAddress: 3, maxConnections: 5 });
    const a = await Promise.all([1, 2, 3, 4].map(() => open(port, '127.0.0.2')));
    await settle(100);
    expect(a.filter((c) => !c.closed()).length).toBe(3);
    const b = await Promise.all([1, 2].map(() => open(port, '127.0.0.3')));
    const c = await open(port, '127.0.0.4');
    await settle(100);
    expect(b.filter((x) => !x.closed()).length).toBe(2);
    expect(c.closed()).toBe(true);
    // A freed place is taken again.
    a[0]?.socket.destroy();
    await settle(100);
    const d = await open(port, '127.0.0.4');
    d.socket.write('GET /ok HTTP/1.1\r\nhost: x\r\n\r\n');
    await settle(200);
    expect(d.text()).toMatch(/^HTTP\/1\.1 200/);
  });

  it('closes a connection whose headers, or whole request, do not arrive in time, and an idle kept-alive one', async () => {
    const { port } = await start({ headersTimeoutMs: 300, requestTimeoutMs: 600, keepAliveTimeoutMs: 300, checkIntervalMs: 50 });
    const slowHead = await open(port);
    slowHead.socket.write('POST /echo HTTP/1.1\r\nho');
    const slowBody = await open(port);
    slowBody.socket.write(`${postHead(100)}{"a":`);
    const idle = await open(port);
    idle.socket.write('GET /ok HTTP/1.1\r\nhost: x\r\n\r\n');
    await Promise.race([Promise.all([slowHead.ended, slowBody.ended, idle.ended]), settle(3000)]);
    expect([slowHead.closed(), slowBody.closed(), idle.closed()]).toEqual([true, true, true]);
    expect(idle.text()).toMatch(/^HTTP\/1\.1 200/);
  });
});

describe('createHttpApp bodies', () => {
  it('reads a body sent a byte at a time into one buffer, and refuses past the budget of bodies being received (503, retry after 1 s)', async () => {
    const { port } = await start({ maxBodyBytes: 64 * 1024 });
    const body = JSON.stringify({ text: 'x'.repeat(50_000) });
    const trickled = await open(port);
    trickled.socket.write(postHead(body.length));
    for (let i = 0; i < 200; i++) trickled.socket.write(body[i] as string);
    trickled.socket.write(body.slice(200, 45_000));
    await settle(200);
    // Another body that would pass the budget with the first one held.
    const second = await open(port);
    second.socket.write(postHead(body.length) + body.slice(0, 30_000));
    await Promise.race([second.ended, settle(2000)]);
    expect(second.text()).toMatch(/^HTTP\/1\.1 503/);
    expect(second.text()).toMatch(/retry-after: 1/i);
    expect(second.text()).toContain('"code":"Full"');
    trickled.socket.write(body.slice(45_000));
    await settle(300);
    expect(trickled.text()).toMatch(/^HTTP\/1\.1 200/);
    expect(trickled.text()).toContain(`{"got":${body}}`);
  });

  it('reads a binary body whole in one chunk, or in many, to the same bytes', async () => {
    const { port } = await start({});
    const body = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7) % 251));
    const expected = { length: 5000, sum: body.reduce((s, x) => (s * 31 + x) >>> 0, 7) };
    const head = `POST /bytes HTTP/1.1\r\nhost: x\r\ncontent-type: application/octet-stream\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`;
    const whole = await open(port);
    whole.socket.write(Buffer.concat([Buffer.from(head), body]));
    const pieces = await open(port);
    pieces.socket.write(head);
    for (let at = 0; at < body.length; at += 1500) {
      pieces.socket.write(body.subarray(at, at + 1500));
      await settle(20);
    }
    await Promise.all([Promise.race([whole.ended, settle(2000)]), Promise.race([pieces.ended, settle(2000)])]);
    for (const c of [whole, pieces]) {
      expect(c.text()).toMatch(/^HTTP\/1\.1 200/);
      expect(JSON.parse(c.text().slice(c.text().indexOf('\r\n\r\n') + 4))).toEqual(expected);
    }
  });

  it('refuses a body past its route\'s bound from its content-length (413, unread, closed), and reads one within it', async () => {
    const { port } = await start({});
    const big = await open(port);
    big.socket.write(postHead(2 * 1024 * 1024));
    await Promise.race([big.ended, settle(2000)]);
    expect(big.closed()).toBe(true);
    expect(big.text()).toMatch(/^HTTP\/1\.1 413/);
    const response = await fetch(`http://127.0.0.1:${port}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
    expect(await response.json()).toEqual({ got: { a: 1 } });
  });
});
