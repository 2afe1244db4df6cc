/**
 * readSse (src/orchestrator/openai/sse-reader.ts): an engine's server-sent events found in its
 * bytes, however the bytes are cut into chunks — a character or a CR LF split across two, two
 * events in one — from a Node stream (read by its events) and from a web stream alike; `[DONE]`
 * reads the body to its end, a stop destroys it, an end before `[DONE]` is a StreamCut.
 */
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { readSse, StreamCut } from '../../../src/orchestrator/openai/sse-reader.js';

const events = ['{"choices":[{"text":"日本"}]}', '{"choices":[{"text":"🙂 é"}]}', '{"usage":{"completion_tokens":2}}'];
const wire = (crlf: boolean): Buffer => {
  const nl = crlf ? '\r\n' : '\n';
  return Buffer.from(`: keep-alive${nl}${nl}${events.map((e) => `data: ${e}${nl}${nl}`).join('')}data: [DONE]${nl}${nl}`);
};
/** `bytes` cut at every `step` bytes. */
const cut = (bytes: Buffer, step: number): Buffer[] => Array.from({ length: Math.ceil(bytes.length / step) }, (_, i) => bytes.subarray(i * step, (i + 1) * step));
const web = (chunks: Uint8Array[]): ReadableStream<Uint8Array> => new ReadableStream({ start: (c) => { for (const x of chunks) c.enqueue(x); c.close(); } });

describe('readSse', () => {
  it('finds every event whole, however the bytes are cut, from Node and web streams', async () => {
    for (const crlf of [false, true]) {
      for (const step of [1, 2, 3, 7, 1000]) {
        for (const node of [true, false]) {
          const seen: string[] = [];
          const chunks = cut(wire(crlf), step);
          const end = await readSse(node ? Readable.from(chunks) : web(chunks), (d) => void seen.push(d));
          expect(end).toBe('done');
          expect(seen).toEqual(events);
        }
      }
    }
  });

  it('joins multi-line data and skips comments', async () => {
    const seen: string[] = [];
    await readSse(Readable.from([Buffer.from('data: a\ndata:b\n\n: ping\n\nevent: x\ndata: c\n\ndata: [DONE]\n\n')]), (d) => void seen.push(d));
    expect(seen).toEqual(['a\nb', 'c']);
  });

  it('reads the body to its end after [DONE], and destroys it when told to stop', async () => {
    const rest = Readable.from([Buffer.from('data: 1\n\ndata: [DONE]\n\n'), Buffer.from('0'.repeat(10))]);
    expect(await readSse(rest, () => true)).toBe('done');
    await finished(rest);
    expect(rest.readableEnded).toBe(true);
    const stopped = Readable.from([Buffer.from('data: 1\n\ndata: 2\n\n'), Buffer.from('data: 3\n\n')]);
    const seen: string[] = [];
    expect(await readSse(stopped, (d) => (seen.push(d), d !== '2'))).toBe('stopped');
    expect(seen).toEqual(['1', '2']);
    expect(stopped.destroyed).toBe(true);
  });

  it('is a StreamCut when the body ends or fails before [DONE], losing a half event', async () => {
    const seen: string[] = [];
    await expect(readSse(Readable.from([Buffer.from('data: 1\n\ndata: 2')]), (d) => void seen.push(d))).rejects.toBeInstanceOf(StreamCut);
    expect(seen).toEqual(['1']);
    const failing = new Readable({ read() {} });
    const read = readSse(failing, () => true);
    failing.push(Buffer.from('data: 1\n\n'));
    failing.destroy(new Error('socket hang up'));
    await expect(read).rejects.toThrow(/broke off: socket hang up/);
    await expect(readSse(web([Buffer.from('data: 1\n\n')]), () => true)).rejects.toBeInstanceOf(StreamCut);
  });

  it('lets an error of the reader through as thrown', async () => {
    await expect(readSse(Readable.from([Buffer.from('data: {nope\n\n')]), (d) => JSON.parse(d) as boolean)).rejects.toBeInstanceOf(SyntaxError);
  });
});
