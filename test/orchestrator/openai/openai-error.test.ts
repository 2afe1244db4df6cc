import { describe, expect, it } from 'vitest';
import { RoutingError } from '../../../src/core/errors.js';
import { openAIError as netOpenAIError } from '../../../src/net/openai-error.js';
import { asServeError } from '../../../src/orchestrator/error-answers.js';
import { checkCompletionRequest } from '../../../src/wire/openai-request.js';
import { ServeError } from '../../../src/wire/serve-error.js';

const openAIError = (error: unknown) => netOpenAIError(error, asServeError);

describe('openAIError', () => {
  it("answers in OpenAI's error object with the house's status, code and Retry-After", () => {
    expect(openAIError(new ServeError('Unauthenticated', 401, 'no key', { field: 'authorization' }))).toEqual({ status: 401, body: { error: { message: 'no key', type: 'authentication_error', param: 'authorization', code: 'Unauthenticated' } }, retryAfterMs: undefined });
    expect(openAIError(new ServeError('NotFound', 404, 'no model', { field: 'model' })).body.error.code).toBe('model_not_found');
    const saturated = Object.assign(new RoutingError('Saturated', 'every copy full'), { retryAfterMs: 2500 });
    expect(openAIError(saturated)).toMatchObject({ status: 429, body: { error: { type: 'rate_limit_error', code: 'RateLimited' } }, retryAfterMs: 2500 });
    expect(openAIError(new RoutingError('DeadlineExceeded', 'late'))).toMatchObject({ status: 504, body: { error: { type: 'timeout_error' } } });
    expect(openAIError(new ServeError('NoRoute', 503, 'none left'))).toMatchObject({ status: 503, retryAfterMs: 1000 });
  });
});

describe('checkCompletionRequest', () => {
  it('refuses n other than 1, a batch of prompts, unknown fields and stream_options without stream, naming the field', () => {
    const field = (body: unknown, chat = false) => {
      try {
        checkCompletionRequest(body, chat);
      } catch (error) {
        return (error as ServeError).field;
      }
      return undefined;
    };
    expect(field({ model: 'm', prompt: 'x', n: 3 })).toBe('n');
    expect(field({ model: 'm', prompt: ['a', 'b'] })).toBe('prompt');
    expect(field({ model: 'm', prompt: 'x', echo: true })).toBe('echo');
    expect(field({ model: 'm', prompt: 'x', stream_options: { include_usage: true } })).toBe('stream_options');
    expect(field({ model: 'm', messages: [{ role: 'tool', content: 'x' }] }, true)).toBe('messages/0/role');
    expect(field({ model: 'm', messages: [{ role: 'user', content: 'x' }], stop: ['a', 'b', 'c', 'd', 'e'] }, true)).toBe('stop');
  });

  it('keeps what it honours: text parts joined, max_completion_tokens, stop as a list, sampling fields', () => {
    const job = checkCompletionRequest({ model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }], max_completion_tokens: 7, stop: 'END', temperature: 0, seed: 4, stream: true, stream_options: { include_usage: true } }, true);
    expect(job).toMatchObject({ chat: true, messages: [{ role: 'user', content: 'ab' }], maxTokens: 7, stop: ['END'], stream: true, includeUsage: true, sampling: { temperature: 0, seed: 4 } });
    expect(checkCompletionRequest({ model: 'm', prompt: [1, 2, 3] }, false)).toMatchObject({ prompt: [1, 2, 3], maxTokens: 16 });
  });
});
