/**
 * Reading a request's body within bounds before anything in it is trusted (docs/security.md,
 * "Connections and bodies"): its declared length is checked against its route's bound before a
 * byte is read, the bytes are copied into one buffer that grows with what arrived (a body sent a
 * byte at a time costs its bytes, not a chunk object each), and every body being received counts
 * against the process's {@link BodyBudget}.
 */
import type { FastifyRequest } from 'fastify';
import { ServeError } from '../wire/serve-error.js';

/** The bytes of bodies being received, across the process, and their bound. */
export class BodyBudget {
  private held = 0;

  /** @param maxBytes most body bytes held by requests still being received */
  constructor(readonly maxBytes: number) {}

  /** Body bytes held now. */
  get bytes(): number {
    return this.held;
  }

  /** Takes `n` bytes; false (nothing taken) when that would pass the bound. */
  take(n: number): boolean {
    if (this.held + n > this.maxBytes) return false;
    this.held += n;
    return true;
  }

  /** Gives back `n` bytes taken. */
  give(n: number): void {
    this.held = Math.max(0, this.held - n);
  }
}

/** What a readable request body looks like to the reader. */
interface BodyStream {
  on(event: 'data', listener: (chunk: Buffer | string) => void): unknown;
  on(event: 'end' | 'close', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  removeAllListeners(event?: string): unknown;
  resume(): unknown;
  destroy?(error?: Error): unknown;
}

/** What a body with a declared length is first given: a one-token stage call (4 KB at 1,024 dims) is read into one allocation. */
const FIRST_BYTES = 8 * 1024;

const tooLarge = (what: string, limit: number): ServeError => new ServeError('InvalidRequest', 413, `body: ${what} is over this route's bound of ${limit} bytes`, { field: 'body' });

/**
 * Reads the body of `request` from `payload` within `limit` bytes (the route's `bodyLimit`) and
 * `budget`. Refused with 413 before reading when its `content-length` says more than `limit`,
 * or when it sends more; 503 (`Full`, retry after 1 s) when the process holds its budget in
 * bodies being received; 400 when it ends short of its `content-length`.
 */
export function readBoundedBody(request: FastifyRequest, payload: BodyStream, limit: number, budget: BodyBudget, done: (error: Error | null, body?: Buffer) => void): void {
  const declared = request.headers['content-length'];
  const length = declared === undefined ? undefined : Number(declared);
  if (length !== undefined && !Number.isSafeInteger(length)) {
    done(new ServeError('InvalidRequest', 400, `header content-length: not a number of bytes ("${String(declared).slice(0, 40)}")`, { field: 'content-length' }));
    return;
  }
  if (length !== undefined && length > limit) {
    done(tooLarge(`content-length ${declared}`, limit));
    return;
  }
  const full = (): ServeError => new ServeError('Full', 503, `body: this process holds ${budget.maxBytes} bytes of bodies being received; try again`, { field: 'body', retryAfterMs: 1000 });
  // Grown as bytes arrive (never past the declared length): a connection that declares much and sends little holds little,
  // at most FIRST_BYTES; a body that fits there (a stage call of a few tokens) is read into one allocation, a large one
  // with a declared length grows fourfold (a 4 MB activation: four copies of what had arrived, not twelve).
  const most = Math.min(limit, length ?? limit);
  let taken = Math.min(most, length === undefined ? 1024 : FIRST_BYTES);
  if (!budget.take(taken)) {
    done(full());
    return;
  }
  // Its own memory, not a slice of Node's shared pool: a parsed message may keep views into it.
  // Made at the first chunk that is not the whole body: a body that arrives whole in one chunk (a
  // stage call of a few tokens) is that chunk, the socket's own read, neither copied nor allocated again.
  let buffer: Buffer | undefined;
  let whole: Buffer | undefined;
  let size = 0;
  let finished = false;
  const finish = (error: Error | null): void => {
    if (finished) return;
    finished = true;
    budget.give(taken);
    payload.removeAllListeners('data');
    if (error !== null) {
      payload.resume(); // what still arrives is discarded until the socket closes
      done(error);
      return;
    }
    if (whole !== undefined) return done(null, whole);
    if (buffer === undefined) return done(null, Buffer.alloc(0));
    // Exactly its bytes (a body without content-length may end short of the buffer grown for it).
    if (size === buffer.length) return done(null, buffer);
    const exact = Buffer.allocUnsafeSlow(size);
    buffer.copy(exact, 0, 0, size);
    done(null, exact);
  };
  payload.on('data', (chunk) => {
    if (finished) return;
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (size + bytes.length > most) return finish(size + bytes.length > limit ? tooLarge(`more than ${limit} bytes`, limit) : new ServeError('InvalidRequest', 400, `body: more bytes than its content-length of ${length}`, { field: 'body' }));
    if (size === 0 && bytes.length === length) {
      whole = bytes; // nothing can follow it: a byte more is past its content-length, refused above
      size = bytes.length;
      return;
    }
    buffer ??= Buffer.allocUnsafeSlow(taken);
    if (size + bytes.length > buffer.length) {
      // Fourfold with a declared length (it ends there), twofold without (at most twice what arrived).
      const grown = Math.min(most, Math.max((length === undefined ? 2 : 4) * buffer.length, size + bytes.length));
      if (!budget.take(grown - buffer.length)) return finish(full());
      taken += grown - buffer.length;
      const next = Buffer.allocUnsafeSlow(grown);
      buffer.copy(next, 0, 0, size);
      buffer = next;
    }
    bytes.copy(buffer, size);
    size += bytes.length;
  });
  payload.on('end', () => {
    if (length !== undefined && size !== length) finish(new ServeError('InvalidRequest', 400, `body: ${size} bytes received of the ${length} its content-length declared`, { field: 'body' }));
    else finish(null);
  });
  payload.on('error', (error) => finish(new ServeError('InvalidRequest', 400, `body: ${error.message}`, { field: 'body' })));
  // Every body's stream closes: the error (and its stack) only for one that closed unfinished.
  payload.on('close', () => {
    if (!finished) finish(new ServeError('InvalidRequest', 400, 'body: the connection closed before the body ended', { field: 'body' }));
  });
}

