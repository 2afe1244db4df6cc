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
export async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8');
  let buffer = '';
  const reader = body.getReader();
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (error) {
        throw new StreamCut(`the answer broke off: ${(error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message}`, { cause: error });
      }
      if (chunk.done) throw new StreamCut('the answer ended before data: [DONE]');
      buffer += decoder.decode(chunk.value, { stream: true }).replaceAll('\r\n', '\n');
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = event
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(l.startsWith('data: ') ? 6 : 5))
          .join('\n');
        if (data === '') continue; // a comment or keep-alive
        if (data === '[DONE]') return;
        yield data;
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
