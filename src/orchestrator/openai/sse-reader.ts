/**
 * Server-sent events off an answer's body, as OpenAI-compatible engines stream them: each event's
 * `data:` text, whole events only (a body cut mid-event loses that event, never half of it). Events
 * are found in the bytes and each is decoded whole, so a UTF-8 character split across chunks is
 * joined. A pushed body (net/peer-stream.ts) and a Node stream (by its `data` events) hand their
 * events on in the turn they arrive (no promise per chunk: the orchestrator re-streams every token
 * of every answer).
 */
import type { Readable } from 'node:stream';

/** Thrown when the body ends before `data: [DONE]`: the engine (or its agent) died mid-answer. */
export class StreamCut extends Error {
  override readonly name = 'StreamCut';
}

/** How a read ended: at `data: [DONE]` (the rest of the body is read to its end and dropped), or stopped by the caller (the body destroyed). */
export type SseEnd = 'done' | 'stopped';

/** An event larger than this ends the read: no engine sends one, and it would be held whole. */
const MAX_EVENT_BYTES = 16 * 1024 * 1024;
const DATA = Buffer.from('data: ');
const LF = 0x0a;
const CR = 0x0d;

/**
 * Hands each event's data (its `data:` lines joined by newlines) to `each` until `data: [DONE]`,
 * or until `each` answers false.
 * @throws {StreamCut} when the body ends (or fails) before `[DONE]`
 */
export function readSse(body: Readable | PushedBody | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>, each: (data: string) => boolean | void): Promise<SseEnd> {
  const events = new SseEvents(each);
  if (isNodeStream(body)) return readNode(body, events);
  if (isPushed(body)) return readPushed(body, events);
  return readIterated(body, events);
}

/** A body that hands its chunks over as they arrive (net/peer-stream.ts): false from `each` aborts it. */
export interface PushedBody {
  read(each: (chunk: Buffer) => boolean | void): Promise<'end' | 'stopped'>;
}

/** The events in a byte stream, fed chunk by chunk. */
class SseEvents {
  /** The bytes of an event not yet whole. */
  private rest: Buffer | undefined;

  constructor(private readonly each: (data: string) => boolean | void) {}

  /** One more chunk: `done` at `[DONE]`, `stopped` when `each` said so, undefined to read on. */
  feed(chunk: Uint8Array): SseEnd | undefined {
    let bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.rest !== undefined) bytes = Buffer.concat([this.rest, bytes]);
    if (bytes.includes(CR)) bytes = withoutCrLf(bytes);
    let start = 0;
    for (let end = bytes.indexOf('\n\n', start); end >= 0; end = bytes.indexOf('\n\n', start)) {
      const data = eventData(bytes, start, end);
      start = end + 2;
      if (data === '') continue; // a comment or keep-alive
      if (data === '[DONE]') return 'done';
      if (this.each(data) === false) return 'stopped';
    }
    this.rest = start < bytes.length ? bytes.subarray(start) : undefined;
    if (this.rest !== undefined && this.rest.length > MAX_EVENT_BYTES) throw new StreamCut(`an event of the answer is over ${MAX_EVENT_BYTES} bytes`);
    return undefined;
  }
}

/** A Node stream, read by its `data` events. */
function readNode(body: Readable, events: SseEvents): Promise<SseEnd> {
  return new Promise<SseEnd>((resolve, reject) => {
    let settled = false;
    const settle = (outcome: SseEnd | Error): void => {
      if (settled) return;
      settled = true;
      body.off('data', onData);
      if (outcome === 'done') {
        body.resume(); // read to its end, so its connection serves the next request
      } else body.destroy();
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const onData = (chunk: Uint8Array): void => {
      let outcome: SseEnd | undefined;
      try {
        outcome = events.feed(chunk);
      } catch (error) {
        settle(error instanceof Error ? error : new Error(String(error))); // an event too large, or `each` threw: as a loop's body would
        return;
      }
      if (outcome !== undefined) settle(outcome);
    };
    body.on('data', onData);
    // Each made only when it is the outcome: a read that ended well still sees the body end and close.
    body.on('end', () => settled || settle(new StreamCut('the answer ended before data: [DONE]')));
    // Kept after the read: an error of the dropped rest is nobody's.
    body.on('error', (error: Error) => settled || settle(new StreamCut(`the answer broke off: ${(error as { cause?: { code?: string } }).cause?.code ?? error.message}`, { cause: error })));
    body.on('close', () => settled || settle(new StreamCut('the answer was closed before data: [DONE]')));
  });
}

/** A pushed body, chunk by chunk; after `[DONE]` its rest is read to its end (its connection then serves the next request). */
function readPushed(body: PushedBody, events: SseEvents): Promise<SseEnd> {
  return new Promise<SseEnd>((resolve, reject) => {
    let settled = false;
    body
      .read((chunk) => {
        if (settled) return true;
        let outcome: SseEnd | undefined;
        try {
          outcome = events.feed(chunk);
        } catch (error) {
          settled = true;
          reject(error); // an event too large, or `each` threw: as a loop's body would
          return false;
        }
        if (outcome === undefined) return true;
        settled = true;
        resolve(outcome);
        return outcome === 'done';
      })
      .then(
        () => settled || ((settled = true), reject(new StreamCut('the answer ended before data: [DONE]'))),
        (error: Error) => settled || ((settled = true), reject(new StreamCut(`the answer broke off: ${(error as { cause?: { code?: string } }).cause?.code ?? error.message}`, { cause: error }))),
      );
  });
}

/** A web stream or any async iterable, chunk by chunk; its iterator's `return` cancels it. */
async function readIterated(body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>, events: SseEvents): Promise<SseEnd> {
  const chunks = 'getReader' in body ? readerChunks(body.getReader()) : body[Symbol.asyncIterator]();
  try {
    for (;;) {
      let chunk: IteratorResult<Uint8Array>;
      try {
        chunk = await chunks.next();
      } catch (error) {
        throw new StreamCut(`the answer broke off: ${(error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message}`, { cause: error });
      }
      if (chunk.done === true) throw new StreamCut('the answer ended before data: [DONE]');
      const outcome = events.feed(chunk.value);
      if (outcome !== undefined) return outcome;
    }
  } finally {
    void Promise.resolve(chunks.return?.()).catch(() => {});
  }
}

/** An event's data: its `data:` lines joined by newlines (one `data: ` line, as engines send, decoded straight from the bytes). */
function eventData(bytes: Buffer, start: number, end: number): string {
  const line = bytes.indexOf(LF, start);
  if ((line < 0 || line >= end) && end - start >= DATA.length && bytes.compare(DATA, 0, DATA.length, start, start + DATA.length) === 0) return bytes.toString('utf8', start + DATA.length, end);
  return bytes
    .toString('utf8', start, end)
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => l.slice(l.startsWith('data: ') ? 6 : 5))
    .join('\n');
}

/** The bytes with each CR LF as LF; a CR at the very end is kept (its LF may be the next chunk's first byte). */
function withoutCrLf(bytes: Buffer): Buffer {
  const out = Buffer.allocUnsafe(bytes.length);
  let n = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i] as number;
    if (b === CR && bytes[i + 1] === LF) continue;
    out[n++] = b;
  }
  return out.subarray(0, n);
}

function isPushed(body: unknown): body is PushedBody {
  return typeof (body as PushedBody).read === 'function' && !('getReader' in (body as object)) && !(Symbol.asyncIterator in (body as object));
}

function isNodeStream(body: unknown): body is Readable {
  return typeof (body as Readable).on === 'function' && typeof (body as Readable).destroy === 'function' && typeof (body as Readable).resume === 'function';
}

/** A web stream's reader as an iterator whose `return` cancels the stream. */
function readerChunks(reader: ReadableStreamDefaultReader<Uint8Array>): AsyncIterator<Uint8Array> {
  return {
    next: () => reader.read() as Promise<IteratorResult<Uint8Array>>,
    return: async () => {
      await reader.cancel().catch(() => {});
      return { done: true, value: undefined };
    },
  };
}
