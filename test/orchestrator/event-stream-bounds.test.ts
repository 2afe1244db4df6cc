/**
 * `GET /v1/events` under clients that never read: each client's unsent events are capped
 * (SSE_CLIENT_BUFFER_BYTES), a client past it is dropped and counted, and a reading client keeps
 * every event. Real sockets on loopback; the stream lives in this process, so its memory is this
 * process's RSS. Scaled down from the issue's 100 clients to 40, each sent 40 MB of events: past
 * the cap and the sockets' own buffers, the point holds at any size.
 */
import { createServer, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/runtime/clock.js';
import { EventStream, SSE_CLIENT_BUFFER_BYTES } from '../../src/orchestrator/event-stream.js';
import { waitFor } from './processes.js';

const sockets: Socket[] = [];
afterAll(() => {
  for (const s of sockets) s.destroy();
});

describe('EventStream', () => {
  it('drops and counts clients that do not read, keeps memory flat, and a reading client gets every event', async () => {
    let dropped = 0;
    const stream = new EventStream(new ManualClock(0), 15_000, () => dropped++);
    const responses: ServerResponse[] = [];
    const server = createServer((_request, response: ServerResponse) => {
      responses.push(response);
      stream.attach(response, { hello: true });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const request = `GET /v1/events HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\r\n`;
    // 40 clients that send their request and never read a byte.
    for (let i = 0; i < 40; i++) {
      const s = connect(port, '127.0.0.1', () => s.write(request));
      s.pause();
      sockets.push(s);
    }
    // One that reads everything.
    let read = 0;
    const reader = connect(port, '127.0.0.1', () => reader.write(request));
    reader.on('data', (chunk: Buffer) => (read += chunk.length));
    sockets.push(reader);
    await waitFor('41 clients attached', () => (stream.size === 41 ? true : undefined), 5000, 10);
    const readerResponse = responses[40] as ServerResponse;
    global.gc?.();
    const before = process.memoryUsage().rss;
    const payload = { blob: 'x'.repeat(8 * 1024) };
    let sent = 0;
    for (let i = 0; i < 5000; i++) {
      stream.publish('test.event', payload); // ≈ 8 KB each: 40 MB for every client
      sent += 8 * 1024;
      // Every 80 KB the reader is let catch up (it reads; the others never do), however busy the machine.
      if (i % 10 === 9) await waitFor('the reader caught up', () => (readerResponse.writableLength === 0 ? true : undefined), 20_000, 1);
    }
    const grown = (process.memoryUsage().rss - before) / 1024 / 1024;
    expect(dropped).toBe(40);
    expect(stream.size).toBe(1);
    expect(grown).toBeLessThan(50);
    await waitFor('the reader has every event', () => (read >= sent ? true : undefined), 20_000, 20);
    expect(readerResponse.destroyed).toBe(false);
    expect(SSE_CLIENT_BUFFER_BYTES).toBe(256 * 1024);
    stream.close();
    await new Promise((resolve) => server.close(resolve));
  }, 60_000);
});
