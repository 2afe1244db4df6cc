/**
 * What a replica trusts (docs/replication.md, "Signed entries"): with the swarm secret, it signs
 * what it writes (format version 2) and takes only what is signed with it; without, it reads and
 * writes version 1 and checks nothing. One place holds the signer, the log's acceptance and the
 * heartbeat codec, so the replica's parts ask it rather than each deciding.
 */
import { systemClock } from '../runtime/clock.js';
import type { TimeSource } from '../runtime/types.js';
import { HeartbeatCodec } from './heartbeat-codec.js';
import { LogAcceptance } from './log-acceptance.js';
import { decodeEntry, formatsOf, type LogEntry } from './log-entry.js';
import { LogSigner } from './log-signer.js';

/**
 * The format versions a replica reads and writes, given in its connect options under this key:
 * the tests' stand-in for a replica of the release before (not exported from any entry).
 */
export const kFormats: unique symbol = Symbol('hecate-swarm.formats');

/** One replica's signer and checks. */
export class ReplicaTrust {
  /** With the secret: signs and verifies. */
  readonly signer: LogSigner | undefined;
  /** With the secret: which log entries are applied. */
  readonly acceptance: LogAcceptance | undefined;
  readonly heartbeats: HeartbeatCodec;
  /** The format versions this replica reads and writes. */
  readonly formats: readonly number[];
  private readonly wall: TimeSource;

  /** @param floor the log's floor (write-format.ts): heartbeats follow it */
  constructor(swarm: string, secret: Uint8Array | string | undefined, wall: TimeSource = systemClock, floor: () => number = () => 2, formats?: readonly number[]) {
    this.wall = wall;
    this.signer = secret === undefined ? undefined : new LogSigner(secret, swarm);
    this.acceptance = this.signer === undefined ? undefined : new LogAcceptance(this.signer);
    this.heartbeats = new HeartbeatCodec(this.signer, wall, floor);
    this.formats = formats ?? formatsOf(this.signer !== undefined);
  }

  /** The entry as it goes on the log now: from version 2, signed at this moment; version 1 as it is. */
  seal(entry: LogEntry): LogEntry {
    if (this.signer === undefined || entry.v < 2) return entry;
    const { sig: _sig, at: _at, ...body } = entry;
    return this.signer.signed('entry', { ...body, at: this.wall.now() } as LogEntry);
  }

  /** The log's first entry (its bytes, if still on the stream), if it is signed as this replica takes it. @throws {ReplicationError} as `decodeEntry` */
  firstEntry(data: Uint8Array | undefined): LogEntry | undefined {
    if (data === undefined) return undefined;
    const entry = decodeEntry(data, 1, this.formats);
    return this.signer === undefined || this.signer.verify('entry', entry) || (entry.v === 1 && entry.sig === undefined) ? entry : undefined;
  }
}
