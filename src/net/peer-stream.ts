/**
 * A POST whose answer is read as it arrives, for the orchestrator's re-streamed answers (each token
 * of each OpenAI stream): undici's dispatcher with a handler, so a chunk reaches its reader in the
 * turn its bytes do, with no Node stream, promise or event per chunk (a Node stream's push, its
 * `data` event and its read-ahead were most of the orchestrator's per-token work after the
 * syscalls, in bench/openai-upstream.ts's profile). The agent relays its engine the same way
 * (agent/upstream/upstream-route.ts).
 */
import type { Dispatcher } from 'undici';

/** An answer read as it arrives: its head at once, its body by {@link PeerStreamReply.read} or {@link PeerStreamReply.text}, one of them, once. */
export interface PeerStreamReply {
  readonly status: number;
  readonly ok: boolean;
  readonly headers: { get(name: string): string | null };
  /** Hands each chunk of the body to `each` in the turn it arrives, until the body ends (`end`) or `each` answers false (`stopped`: the request is aborted). Rejects when the body fails or the request is aborted midway. */
  read(each: (chunk: Buffer) => boolean | void): Promise<'end' | 'stopped'>;
  /** The body as text, at most `limit` bytes of it: past it the request is aborted and this rejects (an error answer's). */
  text(limit: number): Promise<string>;
}

/** Bytes of an answer held before anyone reads it; past them its parser (and the sender) waits. */
const EARLY_BYTES = 64 * 1024;

/**
 * POSTs `body` to `url` with `headers` through `dispatcher`; resolves with the answer's head once
 * it arrives, rejects if the call fails before it. `signal` aborts the call at any point.
 */
export function streamPost(dispatcher: Dispatcher, url: string, headers: Record<string, string>, body: string | Buffer, signal: AbortSignal): Promise<PeerStreamReply> {
  return new Promise<PeerStreamReply>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const target = new URL(url);
    let abort: ((error: Error) => void) | undefined;
    /** Chunks that came before a reader (headers and body can arrive in one read). */
    let early: Buffer[] | undefined = [];
    let earlyBytes = 0;
    /** Resumes the answer's parser, paused when {@link EARLY_BYTES} came before a reader. */
    let resume: (() => void) | undefined;
    /** How the body ended before a reader came: `true` whole, else its error. */
    let endedEarly: true | Error | undefined;
    let reader: { each: (chunk: Buffer) => boolean | void; resolve: (end: 'end' | 'stopped') => void; reject: (error: Error) => void } | undefined;
    let stopped = false;
    let answered = false;
    const onAbort = (): void => abort?.(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    const done = (): void => signal.removeEventListener('abort', onAbort);
    /** `chunk` to the reader; false once it stopped (the request aborted). */
    const hand = (chunk: Buffer): boolean => {
      const r = reader as NonNullable<typeof reader>;
      let go: boolean | void;
      try {
        go = r.each(chunk);
      } catch (error) {
        stopped = true;
        r.reject(error instanceof Error ? error : new Error(String(error)));
        abort?.(new Error('the reader failed'));
        return false;
      }
      if (go !== false) return true;
      stopped = true;
      r.resolve('stopped');
      abort?.(new Error('the reader stopped'));
      return false;
    };
    const read = (each: (chunk: Buffer) => boolean | void): Promise<'end' | 'stopped'> =>
      new Promise<'end' | 'stopped'>((res, rej) => {
        if (reader !== undefined) throw new Error('an answer is read once');
        reader = { each, resolve: res, reject: rej };
        const pending = early ?? [];
        early = undefined;
        for (const chunk of pending) if (!hand(chunk)) return;
        if (endedEarly === true) res('end');
        else if (endedEarly !== undefined) rej(endedEarly);
        else if (earlyBytes > EARLY_BYTES) resume?.();
      });
    const text = async (limit: number): Promise<string> => {
      const chunks: Buffer[] = [];
      let size = 0;
      let over = false;
      await read((chunk) => {
        size += chunk.length;
        if (size > limit) return !(over = true);
        chunks.push(chunk);
        return true;
      });
      if (over) throw new Error(`${url} replied more than ${limit} bytes; not read further`);
      return Buffer.concat(chunks, size).toString('utf8');
    };
    dispatcher.dispatch({ origin: target.origin, path: `${target.pathname}${target.search}`, method: 'POST', headers, body }, {
      onConnect(a: (error?: Error) => void) {
        abort = a;
        if (signal.aborted) onAbort();
      },
      onHeaders(status: number, raw: Buffer[], go: () => void) {
        if (status < 200) return true; // an informational head (103 Early Hints): the answer's own comes next
        answered = true;
        resume = go;
        const named = new Map<string, string>();
        for (let i = 0; i + 1 < raw.length; i += 2) {
          const name = (raw[i] as Buffer).toString('latin1').toLowerCase();
          if (!named.has(name)) named.set(name, (raw[i + 1] as Buffer).toString('latin1'));
        }
        resolve({ status, ok: status >= 200 && status < 300, headers: { get: (name) => named.get(name.toLowerCase()) ?? null }, read, text });
        return true;
      },
      onData(chunk: Buffer) {
        if (stopped) return false;
        if (reader === undefined) {
          early?.push(chunk);
          earlyBytes += chunk.length;
          return earlyBytes <= EARLY_BYTES; // past it, paused until a reader comes
        }
        return hand(chunk);
      },
      onComplete() {
        done();
        if (stopped) return;
        if (reader === undefined) endedEarly = true;
        else reader.resolve('end');
      },
      onError(error: Error) {
        done();
        if (!answered) return reject(error);
        if (stopped) return;
        stopped = true;
        if (reader === undefined) endedEarly = error;
        else reader.reject(error);
      },
    });
  });
}
