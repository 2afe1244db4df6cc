/**
 * A heartbeat's bytes on the swarm's core subject `hecate.<swarm>.hb` (docs/replication.md,
 * "Signed entries"). Without the swarm secret, the node's id as text. With it, JSON
 * `{ id, at, sig }`: signed (log-signer.ts) at `at` (the sender's wall clock); a receiver takes it
 * only when the signature verifies, `at` is within 30 s of its own wall clock, and `at` is later
 * than the last heartbeat it took of that node, so a heartbeat copied off the subject and sent
 * again does nothing. While the log's floor is 1 (the upgrade window, docs/replication.md,
 * "Upgrades"), a replica with the secret sends the id as text and takes it too, so it and the
 * replicas of the release before hear each other's heartbeats; once the log is signed, only
 * signed heartbeats count.
 */
import { systemClock } from '../runtime/clock.js';
import type { TimeSource } from '../runtime/types.js';
import { ENTRY_SKEW_MS } from './log-acceptance.js';
import type { LogSigner } from './log-signer.js';

/** Encodes and checks one swarm's heartbeats. */
export class HeartbeatCodec {
  /** Heartbeats dropped: not signed with the secret, too old or too new, or not later than the node's last. */
  rejected = 0;
  /** Per node, the `at` of the last heartbeat taken (only signed ones enter: the table grows with real nodes only). */
  private readonly last = new Map<string, number>();

  /** @param floor the log's floor (write-format.ts): below 2, heartbeats go and are taken as the id as text */
  constructor(
    private readonly signer: LogSigner | undefined,
    private readonly wall: TimeSource = systemClock,
    private readonly floor: () => number = () => 2,
  ) {}

  /** The bytes of a heartbeat of `nodeId`, now. */
  encode(nodeId: string): string {
    if (this.signer === undefined || this.floor() < 2) return nodeId;
    return JSON.stringify(this.signer.signed('heartbeat', { id: nodeId, at: this.wall.now() }));
  }

  /** The node a heartbeat's bytes are of, or undefined when they are not to be taken. */
  decode(text: string): string | undefined {
    if (this.signer === undefined) return text;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    // The upgrade window: an id as text is a heartbeat of a replica without the secret.
    if (this.floor() < 2 && (value === null || typeof value !== 'object' || (value as { sig?: unknown }).sig === undefined)) return text;
    const { id, at } = (value ?? {}) as { id?: unknown; at?: unknown };
    if (typeof id !== 'string' || typeof at !== 'number' || !this.signer.verify('heartbeat', value) || Math.abs(this.wall.now() - at) > ENTRY_SKEW_MS || at <= (this.last.get(id) ?? -Infinity)) {
      this.rejected++;
      return undefined;
    }
    this.last.set(id, at);
    return id;
  }
}
