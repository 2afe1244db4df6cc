/**
 * A local inspector for `swarm-sim --inspect` and `createWebSocketInspector`: a WebSocket server
 * that hands every inspection event to `onEvent` and relays it to its other connections (as
 * `@statelyai/inspect/server` does, so `createWebSocketReceiver` clients read the run live).
 * Unlike that package's `createInspectorServer()`, which listens on every interface and opens
 * https://stately.ai in a browser, it binds 127.0.0.1 unless given another host, opens nothing,
 * serves no page and needs no network. Loads the optional peer `ws`.
 */
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';

/** Options of {@link startInspectorServer}. */
export interface InspectorServerOptions {
  /** Address to bind; anything but loopback must be asked for here. @defaultValue '127.0.0.1' */
  readonly host?: string;
  /** Port; 0 picks a free one. @defaultValue 8080 */
  readonly port?: number;
  /** Called with every event received (parsed JSON) and its text. */
  readonly onEvent?: (event: unknown, text: string) => void;
  /** Events kept for a connection that arrives later (a receiver opened after the run). @defaultValue 200 */
  readonly replay?: number;
}

/** A running local inspector. */
export interface InspectorServer {
  /** Where to point `--inspect` or `createWebSocketInspector({ url })`. */
  readonly url: string;
  /** The address and port actually bound. */
  readonly address: AddressInfo;
  /** Events received so far (text that is not JSON is relayed but not counted). */
  readonly received: () => number;
  /** Closes every connection and the server. */
  close(): Promise<void>;
}

/** The largest message accepted: a snapshot of a large swarm, with room to spare. */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/**
 * Starts a local inspector (see the file comment).
 * @throws the listen error (`EADDRINUSE`, `EADDRNOTAVAIL`, …) when the address cannot be bound.
 * @example
 * const server = await startInspectorServer({ port: 0, onEvent: (e) => console.log(e) });
 * // hecate-node swarm-sim … --inspect ${server.url}
 * await server.close();
 */
export async function startInspectorServer(options: InspectorServerOptions = {}): Promise<InspectorServer> {
  const host = options.host ?? '127.0.0.1';
  const replay = options.replay ?? 200;
  const wss = new WebSocketServer({ host, port: options.port ?? 8080, maxPayload: MAX_MESSAGE_BYTES });
  await new Promise<void>((resolve, reject) => {
    wss.once('listening', () => {
      wss.off('error', reject);
      resolve();
    });
    wss.once('error', reject);
  });
  const kept: string[] = [];
  let received = 0;
  wss.on('connection', (socket) => {
    socket.on('error', () => {});
    for (const text of kept) socket.send(text);
    socket.on('message', (data, isBinary) => {
      if (isBinary) return;
      const text = data.toString();
      kept.push(text);
      if (kept.length > replay) kept.shift();
      for (const client of wss.clients) if (client !== socket && client.readyState === WebSocket.OPEN) client.send(text);
      let event: unknown;
      try {
        event = JSON.parse(text);
      } catch {
        return;
      }
      received++;
      options.onEvent?.(event, text);
    });
  });
  const address = wss.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `ws://${shown}:${address.port}`,
    address,
    received: () => received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close(() => resolve());
      }),
  };
}
