/**
 * An answer read as it arrives (src/net/peer-stream.ts): its chunks in order, those that came with
 * its head included; a reader that stops aborts the request; an abort midway (or before the
 * connection) rejects; at most 64 KB held for a reader not there yet; no listener left; an error
 * answer is read only up to its limit.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getEventListeners } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent } from 'undici';
import { streamPost } from '../../src/net/peer-stream.js';
import { writeBig } from './big-answer.js';

let server: Server;
let base = '';
const dispatcher = new Agent({ keepAliveTimeout: 10_000 });
/** The answers the server has seen end (finished, or closed before their end). */
const ended: { path: string; whole: boolean }[] = [];

beforeAll(async () => {
  server = createServer((req, res: ServerResponse) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const path = req.url ?? '';
      res.on('close', () => ended.push({ path, whole: res.writableFinished }));
      if (path === '/whole') {
        // Head and body in one write: the chunks come before anyone asked to read them.
        res.writeHead(200, { 'content-type': 'text/plain', 'x-echo': body });
        res.end('one,two');
      } else if (path === '/paced') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        let i = 0;
        const tick = setInterval(() => {
          if (res.destroyed) return clearInterval(tick);
          res.write(`piece ${i++};`);
          if (i === 50) {
            clearInterval(tick);
            res.end();
          }
        }, 5);
      } else if (path === '/big') {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        writeBig(res);
      } else if (path === '/big-error') {
        res.writeHead(503, { 'content-type': 'application/json' });
        res.write('x'.repeat(40_000));
        res.end('x'.repeat(40_000));
      } else {
        res.writeHead(404).end('no');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await dispatcher.close();
  await new Promise((resolve) => server.close(resolve));
});

const waitFor = async (ok: () => boolean): Promise<void> => {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
};

describe('streamPost', () => {
  it('answers with the head, then hands over every chunk in order, those that came with the head too', async () => {
    const reply = await streamPost(dispatcher, `${base}/whole`, { 'content-type': 'text/plain' }, 'hello', new AbortController().signal);
    expect(reply.status).toBe(200);
    expect(reply.ok).toBe(true);
    expect(reply.headers.get('X-Echo')).toBe('hello');
    let text = '';
    expect(await reply.read((chunk) => void (text += chunk.toString()))).toBe('end');
    expect(text).toBe('one,two');
    await expect(reply.read(() => true)).rejects.toThrow('an answer is read once');
  });

  it('stops when the reader says so: the request is aborted, the server sees its answer cut', async () => {
    const reply = await streamPost(dispatcher, `${base}/paced`, {}, '', new AbortController().signal);
    let pieces = 0;
    expect(await reply.read(() => ++pieces < 3)).toBe('stopped');
    expect(pieces).toBe(3);
    await waitFor(() => ended.some((e) => e.path === '/paced'));
    expect(ended.find((e) => e.path === '/paced')?.whole).toBe(false);
  });

  it('rejects the read with the reason when the signal aborts midway, and the call when it aborts first', async () => {
    const stop = new AbortController();
    const reply = await streamPost(dispatcher, `${base}/paced`, {}, '', stop.signal);
    let pieces = 0;
    const read = reply.read(() => {
      if (++pieces === 2) stop.abort(new Error('the client went away'));
    });
    await expect(read).rejects.toThrow('the client went away');
    const gone = new AbortController();
    gone.abort(new Error('before anything'));
    await expect(streamPost(dispatcher, `${base}/paced`, {}, '', gone.signal)).rejects.toThrow('before anything');
  });

  it('aborts a call whose signal fires before its connection is made', async () => {
    const fresh = new Agent(); // no connection yet: the call waits for one
    try {
      const stop = new AbortController();
      const call = streamPost(fresh, `${base}/paced`, {}, '', stop.signal);
      stop.abort(new Error('right away'));
      await expect(call).rejects.toThrow('right away');
    } finally {
      await fresh.close();
    }
  });

  it('holds at most 64 KB of an answer nobody reads yet: the sender waits, then everything comes to the reader', async () => {
    const reply = await streamPost(dispatcher, `${base}/big`, {}, '', new AbortController().signal);
    await new Promise((r) => setTimeout(r, 500));
    expect(ended.some((e) => e.path === '/big'), 'the 32 MB answer is not all sent while unread').toBe(false);
    let bytes = 0;
    expect(await reply.read((chunk) => void (bytes += chunk.length))).toBe('end');
    expect(bytes).toBe(32 * 1024 * 1024);
  });

  it('leaves no listener on the signal, however the answer ends', async () => {
    const signals = [new AbortController(), new AbortController(), new AbortController(), new AbortController()];
    await (await streamPost(dispatcher, `${base}/whole`, {}, '', signals[0]!.signal)).read(() => true);
    await (await streamPost(dispatcher, `${base}/paced`, {}, '', signals[1]!.signal)).read(() => false);
    await expect((await streamPost(dispatcher, `${base}/paced`, {}, '', signals[2]!.signal)).read(() => { throw new Error('the reader broke'); })).rejects.toThrow('the reader broke');
    await expect(streamPost(dispatcher, 'http://127.0.0.1:1/x', {}, '', signals[3]!.signal)).rejects.toThrow();
    expect(signals.map((s) => getEventListeners(s.signal, 'abort').length)).toEqual([0, 0, 0, 0]);
  });

  it('reads an error answer up to its limit, and refuses past it', async () => {
    const small = await streamPost(dispatcher, `${base}/nothing`, {}, '', new AbortController().signal);
    expect(small.status).toBe(404);
    expect(small.ok).toBe(false);
    expect(await small.text(1024)).toBe('no');
    const big = await streamPost(dispatcher, `${base}/big-error`, {}, '', new AbortController().signal);
    await expect(big.text(64 * 1024)).rejects.toThrow('more than 65536 bytes');
  });

  it('rejects when nothing answers', async () => {
    await expect(streamPost(dispatcher, 'http://127.0.0.1:1/x', {}, '', new AbortController().signal)).rejects.toThrow();
  });
});
