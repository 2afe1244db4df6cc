/** readSse over a pushed body (the `read(each)` of src/net/peer-stream.ts, serve's forwarded answers): every event whole however cut, CR LF, reading on after [DONE], a stop, an end or a failure before it, a reader that throws. */
import { describe, expect, it } from 'vitest';
import { readSse, StreamCut } from '../../../src/orchestrator/openai/sse-reader.js';

const events = ['{"choices":[{"text":"日本"}]}', '{"choices":[{"text":"🙂 é"}]}', '{"usage":{"completion_tokens":2}}'];
const wire = (crlf: boolean): Buffer => {
  const nl = crlf ? '\r\n' : '\n';
  return Buffer.from(`: keep-alive${nl}${nl}${events.map((e) => `data: ${e}${nl}${nl}`).join('')}data: [DONE]${nl}${nl}`);
};
const cut = (bytes: Buffer, step: number): Buffer[] => Array.from({ length: Math.ceil(bytes.length / step) }, (_, i) => bytes.subarray(i * step, (i + 1) * step));
/** A pushed body handing `chunks` over, then ending (or failing with `fail`); `handed` counts the chunks given. */
const pushed = (chunks: Buffer[], fail?: Error) => {
  const state = { handed: 0, stopped: false };
  return {
    state,
    read: (each: (c: Buffer) => boolean | void) =>
      new Promise<'end' | 'stopped'>((res, rej) => {
        for (const c of chunks) {
          state.handed++;
          if (each(c) === false) {
            state.stopped = true;
            return res('stopped');
          }
        }
        if (fail !== undefined) rej(fail);
        else res('end');
      }),
  };
};

describe('readSse, pushed body', () => {
  it('finds every event whole however cut, reads on after [DONE], stops when told', async () => {
    for (const crlf of [false, true]) {
      for (const step of [1, 2, 3, 7, 1000]) {
        const seen: string[] = [];
        const chunks = [...cut(wire(crlf), step), Buffer.from('trailing')];
        const body = pushed(chunks);
        expect(await readSse(body, (d) => void seen.push(d))).toBe('done');
        expect(seen).toEqual(events);
        expect(body.state.handed).toBe(chunks.length);
      }
    }
    const body = pushed([Buffer.from('data: 1\n\ndata: 2\n\n'), Buffer.from('data: 3\n\n')]);
    const seen: string[] = [];
    expect(await readSse(body, (d) => (seen.push(d), d !== '2'))).toBe('stopped');
    expect(seen).toEqual(['1', '2']);
    expect(body.state.stopped).toBe(true);
  });

  it('is a StreamCut when it ends or fails before [DONE]; a reader error comes through as thrown, stopping the body', async () => {
    await expect(readSse(pushed([Buffer.from('data: 1\n\ndata: 2')]), () => true)).rejects.toBeInstanceOf(StreamCut);
    await expect(readSse(pushed([Buffer.from('data: 1\n\n')], new Error('socket hang up')), () => true)).rejects.toThrow(/broke off: socket hang up/);
    const body = pushed([Buffer.from('data: {nope\n\n'), Buffer.from('data: 2\n\n')]);
    await expect(readSse(body, (d) => JSON.parse(d) as boolean)).rejects.toBeInstanceOf(SyntaxError);
    expect(body.state.stopped).toBe(true);
  });
});
