/** The completion's text cut at its stop strings, handed out in final pieces (stop-text.ts). */
import { describe, expect, it } from 'vitest';
import { StopText } from '../../src/model/stop-text.js';
import { parseCompletionRequest } from '../../src/orchestrator/completion-request.js';

describe('StopText', () => {
  it('holds back what may begin a stop string and cuts before the first one', () => {
    const t = new StopText(['END', '\n\n']);
    expect(t.push('ab')).toBe('ab');
    expect(t.push('abE')).toBe(''); // "E" may begin "END"
    expect(t.push('abEx')).toBe('Ex');
    expect(t.push('abExEN')).toBe('');
    expect(t.push('abExENDyz')).toBe('');
    expect(t.stopped).toBe(true);
    expect(t.text).toBe('abEx');
    expect(t.flush()).toBe('');
  });

  it('without stops hands out everything but a trailing half character, and flushes the rest', () => {
    const t = new StopText([]);
    expect(t.push('a\uFFFD')).toBe('a');
    expect(t.push('aé')).toBe('é');
    expect(t.push('aéb\uFFFD')).toBe('b');
    expect(t.flush()).toBe('\uFFFD');
    expect(t.text).toBe('aéb\uFFFD');
  });
});

describe('parseCompletionRequest', () => {
  it('reads OpenAI\'s fields with their defaults', () => {
    expect(parseCompletionRequest({ model: 'm', prompt: 'hi' })).toEqual({ model: 'm', prompt: 'hi', maxTokens: 16, temperature: 1, topP: 1, seed: 0, stop: [], stream: false, returnLogits: false });
    expect(parseCompletionRequest({ model: 'm', prompt: [1, 2], max_tokens: 3, temperature: 0, top_p: 0.5, seed: 9, stop: 'x', stream: true })).toMatchObject({ prompt: [1, 2], maxTokens: 3, temperature: 0, topP: 0.5, seed: 9, stop: ['x'], stream: true });
  });

  it.each([
    [{ prompt: 'x' }, 'model'],
    [{ model: 'm', prompt: 7 }, 'prompt'],
    [{ model: 'm', prompt: [] }, 'prompt'],
    [{ model: 'm', prompt: [1, -1] }, 'prompt'],
    [{ model: 'm', prompt: 'x', max_tokens: 0 }, 'max_tokens'],
    [{ model: 'm', prompt: 'x', max_tokens: 1.5 }, 'max_tokens'],
    [{ model: 'm', prompt: 'x', temperature: 3 }, 'temperature'],
    [{ model: 'm', prompt: 'x', top_p: 0 }, 'top_p'],
    [{ model: 'm', prompt: 'x', seed: -1 }, 'seed'],
    [{ model: 'm', prompt: 'x', stop: ['a', 'b', 'c', 'd', 'e'] }, 'stop'],
    [{ model: 'm', prompt: 'x', stop: [''] }, 'stop'],
    [{ model: 'm', prompt: 'x', stream: 'yes' }, 'stream'],
    [{ model: 'm', prompt: 'x', n: 2 }, 'n'],
    [{ model: 'm', prompt: 'x', steps: 2 }, 'steps'],
    [[], 'body'],
  ])('refuses %j with 400 naming %s', (body, field) => {
    try {
      parseCompletionRequest(body);
      expect.unreachable();
    } catch (error) {
      expect(error).toMatchObject({ code: 'InvalidRequest', status: 400, field });
    }
  });
});
