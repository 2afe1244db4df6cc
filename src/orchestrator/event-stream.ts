/**
 * `GET /v1/events`: a server-sent-events hub. Every event the Swarm emits (and the orchestrator's
 * own: joins, leaves, a suspect heard from again) goes to every connected client as
 * `event: <type>` / `data: <json>`, numbered with `id:`. A client that does not read is dropped
 * once its unsent events pass {@link SSE_CLIENT_BUFFER_BYTES} (docs/security.md): one slow reader
 * costs the orchestrator that much memory at most, and is counted. A client attached as one
 * (not the operator: status-routes.ts) gets every event's `url` as `null`.
 */
import type { ServerResponse } from 'node:http';
import { systemClock } from '../runtime/clock.js';
import type { Clock } from '../runtime/types.js';

/** The most bytes of events waiting to be sent to one client before it is dropped. */
export const SSE_CLIENT_BUFFER_BYTES = 256 * 1024;

/** The clients of one event stream. */
export class EventStream {
  /** Each client, and whether agents' addresses are kept from it. */
  private readonly clients = new Map<ServerResponse, boolean>();
  private seq = 0;
  private keepAlive: unknown;
  private closed = false;

  /** `clock` runs the keep-alive timer (the orchestrator's clock). */
  constructor(
    private readonly clock: Clock = systemClock,
    private readonly keepAliveMs = 15_000,
    /** Told of each client dropped for not reading. */
    private readonly onDrop: () => void = () => {},
    private readonly maxBufferedBytes = SSE_CLIENT_BUFFER_BYTES,
  ) {
    this.keepAlive = this.scheduleKeepAlive();
  }

  /** A comment line now and then keeps proxies and idle timeouts from closing a quiet stream. */
  private scheduleKeepAlive(): unknown {
    const handle = this.clock.setTimeout(() => {
      if (this.closed) return;
      this.write(': keep-alive\n\n');
      this.keepAlive = this.scheduleKeepAlive();
    }, this.keepAliveMs);
    // The host's timer must not keep the process alive on its own (as before); other clocks' handles have no unref.
    (handle as { unref?: () => void } | null)?.unref?.();
    return handle;
  }

  /**
   * Takes over a response: SSE headers, a first `hello` event, then every published event until
   * it closes; `withoutUrls`: each event's `url` sent as `null` (the caller redacts `hello`).
   */
  attach(response: ServerResponse, hello: unknown, withoutUrls = false): void {
    response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    response.write('retry: 1000\n\n');
    response.write(frame(++this.seq, 'hello', hello));
    this.clients.set(response, withoutUrls);
    response.on('close', () => this.clients.delete(response));
  }

  /** Sends one event to every client; to a client's view with its `url` (an agent's address) as `null`. */
  publish(type: string, data: unknown): void {
    if (this.clients.size === 0) {
      this.seq++;
      return;
    }
    const id = ++this.seq;
    const text = frame(id, type, data);
    const hasUrl = typeof data === 'object' && data !== null && 'url' in data;
    this.write(text, hasUrl ? frame(id, type, { ...data, url: null }) : text);
  }

  /** Connected clients. */
  get size(): number {
    return this.clients.size;
  }

  /** Whether {@link close} was called: the orchestrator is closing, and tells nothing more. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Ends every stream (the server is closing). */
  close(): void {
    this.closed = true;
    this.clock.clearTimeout(this.keepAlive);
    for (const client of this.clients.keys()) client.end();
    this.clients.clear();
  }

  private write(text: string, withoutUrls = text): void {
    for (const [client, redacted] of this.clients) {
      client.write(redacted ? withoutUrls : text);
      // What the socket has not taken yet: past the cap, the client is not reading. Dropped.
      if (client.writableLength > this.maxBufferedBytes) {
        this.clients.delete(client);
        client.destroy();
        this.onDrop();
      }
    }
  }
}

function frame(id: number, type: string, data: unknown): string {
  return `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}
