import { describe, expect, it } from 'vitest';
import { StreamText } from '../../../src/orchestrator/openai/stream-text.js';

describe('StreamText', () => {
  it('ends at a stop string split across two pieces (two engines after a failover) and releases nothing of it', () => {
    const t = new StreamText(['STOP']);
    expect(t.push('the ST')).toBe('the ');
    expect(t.push('OP and more')).toBe('');
    expect(t.stopped()).toBe(true);
    expect(t.released()).toBe('the ');
    expect(t.push('after')).toBe('');
  });

  it('lets a held prefix go once the next piece shows it is no stop string', () => {
    const t = new StreamText(['STOP']);
    expect(t.push('a S')).toBe('a ');
    expect(t.push('Tx')).toBe('STx');
    expect(t.push('ST')).toBe('');
    expect(t.flush()).toBe('ST');
    expect(t.released()).toBe('a STxST');
    expect(t.generated()).toBe('a STxST');
  });

  it('never releases half of a surrogate pair', () => {
    const t = new StreamText([]);
    const smile = '🙂';
    expect(t.push(`x${smile[0] as string}`)).toBe('x');
    expect(t.push(`${smile[1] as string}y`)).toBe(`${smile}y`);
    expect(t.count()).toBe(2);
  });

  it('cuts at the earliest of several stop strings inside one piece', () => {
    const t = new StreamText(['cd', 'b']);
    expect(t.push('abcde')).toBe('a');
    expect(t.stopped()).toBe(true);
  });
});
