/**
 * How much of a server's time and memory a connection may hold before anything it sent is trusted
 * (docs/security.md, "Connections and bodies"): time to send its headers and its whole request,
 * how long it may idle between requests and how many it may send, how many connections one source
 * address and the whole process may hold, and how many bytes of bodies being received the process
 * holds (bounded-body.ts).
 */
import type { Server } from 'node:net';

/** The bounds of a server's connections. */
export interface ConnectionLimits {
  /** A request's headers must arrive within this. */
  readonly headersTimeoutMs: number;
  /** A whole request (headers and body) must arrive within this; its answer may take longer. */
  readonly requestTimeoutMs: number;
  /** An idle kept-alive connection is closed after this. */
  readonly keepAliveTimeoutMs: number;
  /** A kept-alive connection is closed after this many requests. */
  readonly maxRequestsPerSocket: number;
  /** Connections held at once by the process; past it a new one is closed at once. */
  readonly maxConnections: number;
  /** Connections held at once from one source address; past it a new one from there is closed at once. */
  readonly maxConnectionsPerAddress: number;
  /** Bytes of request bodies being received, across the process (bounded-body.ts). */
  readonly maxBodyBytes: number;
  /** How often the timeouts above are checked. */
  readonly checkIntervalMs: number;
}

/** The bounds `hecate-node serve` and `agent` run with. */
export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = Object.freeze({
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 10_000,
  maxRequestsPerSocket: 1000,
  maxConnections: 4096,
  maxConnectionsPerAddress: 1024,
  maxBodyBytes: 64 * 1024 * 1024,
  checkIntervalMs: 1000,
});

/** Connections held now, by source address; and how many were closed at once for a cap. */
export interface ConnectionCounts {
  readonly byAddress: ReadonlyMap<string, number>;
  /** Connections closed on arrival for the per-address cap (the process cap closes them before Node reports them). */
  readonly refused: number;
}

/**
 * Caps `server`'s connections: `maxConnections` in all (Node closes the ones past it before they
 * are reported), `maxConnectionsPerAddress` from one source address (closed as they arrive).
 */
export function limitConnections(server: Server, limits: Pick<ConnectionLimits, 'maxConnections' | 'maxConnectionsPerAddress'>): ConnectionCounts {
  const byAddress = new Map<string, number>();
  const counts = { byAddress, refused: 0 };
  server.maxConnections = limits.maxConnections;
  server.on('connection', (socket) => {
    const address = socket.remoteAddress ?? '';
    const held = byAddress.get(address) ?? 0;
    if (held >= limits.maxConnectionsPerAddress) {
      counts.refused++;
      socket.destroy();
      return;
    }
    byAddress.set(address, held + 1);
    socket.once('close', () => {
      const left = (byAddress.get(address) ?? 1) - 1;
      if (left > 0) byAddress.set(address, left);
      else byAddress.delete(address);
    });
  });
  return counts;
}
