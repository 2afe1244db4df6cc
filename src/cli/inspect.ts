/**
 * Live inspection for `swarm-sim --inspect URL`: XState inspection events of the Swarm actor and
 * its node actors, streamed as Stately inspection events (`@statelyai/inspect`) over a WebSocket
 * to a Stately-compatible inspector — the same JSON messages `createWebSocketInspector` sends.
 * Loopback only unless a remote address is asked for explicitly.
 */
import { createInspector, type StatelyInspectionEvent } from '@statelyai/inspect';
import type { InspectionEvent, Observer } from 'xstate';
import WebSocket from 'ws';
import { UsageError } from './args.js';
import { isLoopbackHost } from './loopback.js';

export { isLoopbackHost } from './loopback.js';

/** Options of {@link connectInspector}. */
export interface InspectorConnectOptions {
  /** Accept an address other than loopback. @defaultValue false */
  readonly allowRemote?: boolean;
  /** How long to wait for the inspector to accept the connection. @defaultValue 5000 */
  readonly timeoutMs?: number;
  /** How long {@link LiveInspector.close} waits for queued events to leave. @defaultValue 5000 */
  readonly flushTimeoutMs?: number;
}

/** An open connection to an inspector. */
export interface LiveInspector {
  /** The observer to pass as `createSwarm(..., { inspect })`. */
  readonly inspect: Observer<InspectionEvent>;
  /** Sends what is still queued, then closes. Resolves with the number of events sent and dropped. */
  close(): Promise<{ sent: number; dropped: number }>;
}

/**
 * Checks an `--inspect` value: a `ws://` or `wss://` URL, on loopback unless `allowRemote`.
 * @throws {UsageError} naming the flag and what to do.
 */
export function parseInspectUrl(raw: string, allowRemote = false): URL {
  if (typeof raw !== 'string') throw new UsageError('flag --inspect: expected a WebSocket URL like ws://127.0.0.1:8080');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`flag --inspect: expected a WebSocket URL like ws://127.0.0.1:8080, got "${raw}"`);
  }
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') {
    throw new UsageError(`flag --inspect: expected a ws:// or wss:// URL, got "${raw}"`);
  }
  if (!allowRemote && !isLoopbackHost(url.hostname)) {
    throw new UsageError(`flag --inspect: "${url.hostname}" is not a loopback address; inspection events carry the swarm's plan and telemetry, so add --inspect-remote to send them off this machine`);
  }
  return url;
}

/**
 * The WebSocket leg of the inspector. Unlike `createWebSocketInspector`'s adapter (which reconnects
 * every 5 s forever, keeps only the last 200 events before the socket opens, and cannot say when
 * it has flushed), this one is opened before the run, never reconnects, and can be drained.
 */
class SocketAdapter {
  sent = 0;
  dropped = 0;
  constructor(private readonly socket: WebSocket) {}

  send(event: StatelyInspectionEvent): void {
    if (this.socket.readyState !== WebSocket.OPEN) {
      this.dropped++;
      return;
    }
    this.socket.send(safeJson(event));
    this.sent++;
  }
}

/** JSON that survives cycles and functions (inspection payloads are user data). */
function safeJson(value: unknown): string {
  const seen = new WeakSet<object>();
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'function') return { type: (v as { name?: string }).name ?? 'function' };
    if (typeof v === 'bigint') return v.toString();
    // The Swarm's context keeps per-node tables in Maps and Sets: show their entries.
    if (v instanceof Map) return Object.fromEntries(v);
    if (v instanceof Set) return [...v];
    if (v !== null && typeof v === 'object') {
      if (seen.has(v)) return '[Circular]';
      seen.add(v);
    }
    return v;
  });
}

/**
 * Opens a WebSocket to the inspector at `url` and returns the observer to inspect a swarm with.
 * @throws {UsageError} for a bad or remote URL (see {@link parseInspectUrl}) or when nothing accepts the connection.
 * @example
 * const live = await connectInspector('ws://127.0.0.1:8080');
 * const swarm = createSwarm(profiles, config, { inspect: live.inspect });
 * // ... run ...
 * swarm.stop();
 * await live.close();
 */
export async function connectInspector(raw: string, options: InspectorConnectOptions = {}): Promise<LiveInspector> {
  const url = parseInspectUrl(raw, options.allowRemote ?? false);
  const timeoutMs = options.timeoutMs ?? 5_000;
  const socket = new WebSocket(url, { handshakeTimeout: timeoutMs });
  await new Promise<void>((resolve, reject) => {
    const fail = (reason: string): void => {
      socket.removeAllListeners();
      socket.on('error', () => {});
      socket.terminate();
      reject(new UsageError(`flag --inspect: cannot connect to ${url.href}: ${reason} (is an inspector listening there?)`));
    };
    socket.once('open', () => {
      socket.removeAllListeners();
      resolve();
    });
    socket.once('error', (error) => fail(error.message || String(error)));
    socket.once('unexpected-response', (_req, res) => fail(`HTTP ${String(res.statusCode)} instead of a WebSocket upgrade`));
  });
  // A dropped connection mid-run loses the rest of the events, never the run itself.
  socket.on('error', () => {});
  const adapter = new SocketAdapter(socket);
  const inspector = createInspector(adapter, { sanitizeContext: plainContext });
  const observer = inspector.inspect as Observer<InspectionEvent>;
  let orchestrator = false;
  return {
    inspect: {
      next(event: InspectionEvent) {
        // Keyed tables become plain entries now, before the inspector's own JSON pass drops them.
        observer.next?.(withPlainContext(event));
        // What the Swarm emits for the orchestrator (node.suspected, node.down with its rescue and
        // cause, node.alive, status.changed): the Stately protocol has no message for an emitted
        // event, so each one goes as an event from the Swarm to an "orchestrator" actor.
        const emitted = emittedBy(event);
        if (emitted === undefined) return;
        // On a later macrotask, as the inspector converts everything else, so the order holds.
        setTimeout(() => {
          if (!orchestrator) {
            orchestrator = true;
            inspector.actor(ORCHESTRATOR, { status: 'active', context: {} } as never, { rootId: emitted.rootId });
          }
          inspector.event(ORCHESTRATOR, plain(emitted.event, 0) as { type: string }, { source: emitted.sessionId });
        }, 0);
      },
      error: (e) => observer.error?.(e),
      complete: () => observer.complete?.(),
    },
    async close() {
      // The inspector converts each event on a later macrotask (setTimeout 0): let those run first.
      await new Promise((resolve) => setTimeout(resolve, 0));
      await drain(socket, options.flushTimeoutMs ?? 5_000);
      await new Promise<void>((resolve) => {
        if (socket.readyState === WebSocket.CLOSED) return resolve();
        const timer = setTimeout(() => {
          socket.terminate();
          resolve();
        }, 1_000);
        socket.once('close', () => {
          clearTimeout(timer);
          resolve();
        });
        socket.close(1000, 'done');
      });
      return { sent: adapter.sent, dropped: adapter.dropped };
    },
  };
}

/** Waits until the socket has handed every queued byte to the OS (or the deadline passes). */
async function drain(socket: WebSocket, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (socket.readyState === WebSocket.OPEN && socket.bufferedAmount > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The pseudo-actor that receives the Swarm's emitted events in the inspector. */
export const ORCHESTRATOR = 'orchestrator';

/** The event a root actor (the Swarm) emitted, read from its `xstate.emit` action; undefined for anything else. */
function emittedBy(event: InspectionEvent): { event: { type: string }; sessionId: string; rootId: string } | undefined {
  if (event.type !== '@xstate.action' || event.action.type !== 'xstate.emit' || (event.actorRef as { _parent?: unknown })._parent !== undefined) return undefined;
  const emitted = (event.action.params as { event?: unknown } | undefined)?.event;
  if (emitted === null || typeof emitted !== 'object' || typeof (emitted as { type?: unknown }).type !== 'string') return undefined;
  return { event: emitted as { type: string }, sessionId: event.actorRef.sessionId, rootId: event.rootId };
}

/**
 * Actor references in a context become their ids and keyed tables (Maps, Sets) their entries, so
 * a snapshot is data, not a graph of actors: the Swarm's `members` table shows each member's
 * profile, slot and actor id.
 */
function plainContext(context: Record<string, unknown>): Record<string, unknown> {
  return plain(context, 0) as Record<string, unknown>;
}

/** A snapshot event with its context made plain (see {@link plainContext}); other events as they are. */
function withPlainContext(event: InspectionEvent): InspectionEvent {
  if (event.type !== '@xstate.snapshot') return event;
  const snapshot = event.snapshot as { context?: unknown };
  if (snapshot === null || typeof snapshot !== 'object' || snapshot.context === null || typeof snapshot.context !== 'object') return event;
  return { ...event, snapshot: { ...event.snapshot, context: plainContext(snapshot.context as Record<string, unknown>) } as unknown as typeof event.snapshot };
}

function plain(value: unknown, depth: number): unknown {
  const id = actorId(value);
  if (id !== undefined) return id;
  if (depth > 3 || value === null || typeof value !== 'object') return value;
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [String(k), plain(v, depth + 1)]));
  if (value instanceof Set) return [...value];
  if (Object.getPrototypeOf(value) !== Object.prototype) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v, depth + 1)]));
}

function actorId(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const v = value as { xstate$$type?: unknown; id?: unknown; sessionId?: unknown };
  if (typeof v.id === 'string' && (v.xstate$$type !== undefined || typeof v.sessionId === 'string')) return v.id;
  return undefined;
}

