/**
 * Server-sent events off a fetch body, as OpenAI-compatible engines stream them: each event's
 * `data:` text, whole events only (a body cut mid-event loses that event, never half of it), bytes
 * decoded as one UTF-8 stream (a character split across chunks is joined).
 */

/** Thrown when the body ends before `data: [DONE]`: the engine (or its agent) died mid-answer. */
export class StreamCut extends Error {
  override readonly name = 'StreamCut';
}

/**
 * Yields each event's data (its `data:` lines joined by newlines) until `data: [DONE]`.
 * @throws {StreamCut} when the body ends (or fails) before `[DONE]`
 */
export async function* sseData(body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8');
  let buffer = '';
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
      const text = decoder.decode(chunk.value, { stream: true });
      buffer += text.includes('\r') ? text.replaceAll('\r\n', '\n') : text;
      let start = 0;
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n', start)) {
        const event = buffer.slice(start, end);
        start = end + 2;
        const data = eventData(event);
        if (data === '') continue; // a comment or keep-alive
        if (data === '[DONE]') return;
        yield data;
      }
      buffer = buffer.slice(start);
    }
  } finally {
    void Promise.resolve(chunks.return?.()).catch(() => {});
  }
}

/** An event's data: its `data:` lines joined by newlines (one `data: ` line, as engines send, without splitting). */
function eventData(event: string): string {
  if (event.startsWith('data: ') && !event.includes('\n')) return event.slice(6);
  return event
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => l.slice(l.startsWith('data: ') ? 6 : 5))
    .join('\n');
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
