import { isRecordLike } from '../core/describe.js';
import type { NodeProfile } from '../core/types.js';
import type { LifecycleEvent } from '../persistence/persisted.js';
import type { SwarmConfig } from '../runtime/types.js';
import { ReplicationError } from './replication-error.js';

/**
 * What a replicated swarm's log holds (docs/replication.md), one JSON object per JetStream
 * message. The first entry is the genesis: the profiles, config and id seed every replica builds
 * its Swarm from. Every other entry is a lifecycle event in its wire form (`Swarm.apply`),
 * applied by every replica in stream order. `id` names the entry
 * (`<replica>.<connection>.<n>`: its proposer, a random name of its connection, a counter) and is
 * the publish's `Nats-Msg-Id`.
 */
export type LogEntry =
  | { readonly v: number; readonly type: 'swarm.genesis'; readonly id: string; readonly profiles: readonly NodeProfile[]; readonly config: SwarmConfig; readonly seed: number }
  | {
      /** The entry's format version ({@link READS_FORMATS}). */
      readonly v: number;
      readonly type: 'swarm.event';
      readonly id: string;
      readonly event: LifecycleEvent;
      /**
       * Present on a mark a replica's node actor made on its own (detector, ejection,
       * self-revival): the sequence of the last entry on the node the replica had applied when it
       * decided. Applied only if no entry on that node was applied since, so two detectors downing
       * one node apply one down.
       */
      readonly basis?: number;
    };

/**
 * The format versions of log entries and snapshots this release reads. Version 1 is the only one
 * so far (entries `{ v: 1, … }`, the KV snapshot `{ v: 1, … }` of a `persistSwarm` save).
 */
export const READS_FORMATS: readonly number[] = [1];

/** The format versions this release can write, newest last. */
export const WRITES_FORMATS: readonly number[] = [1];

/**
 * The format a writer uses: the newest it writes that every live replica announced it reads
 * (docs/replication.md, "Upgrades"). With no other replica heard, its own newest it reads; when no
 * version is read by all, the oldest it writes (a replica behind refuses it clearly).
 */
export function writeFormat(writes: readonly number[], liveReads: readonly (readonly number[])[]): number {
  for (let i = writes.length - 1; i >= 0; i--) {
    const v = writes[i] as number;
    if (liveReads.every((reads) => reads.includes(v))) return v;
  }
  return writes[0] as number;
}

/** The error of a format version this release does not read: it names the version and the ones it reads. */
export function unknownFormat(what: string, version: unknown): ReplicationError {
  return new ReplicationError('UnknownVersion', `${what} is format version ${JSON.stringify(version)}; this replica reads version ${READS_FORMATS.join(', ')}: upgrade it to a release that reads version ${JSON.stringify(version)}`);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The entry's bytes on the stream. */
export function encodeEntry(entry: LogEntry): Uint8Array {
  return encoder.encode(JSON.stringify(entry));
}

/**
 * A stream message's entry; the event inside is checked when applied (`Swarm.apply`), alike on
 * every replica.
 * @throws {ReplicationError} `BadLog` for bytes no replica writes (not JSON, unknown type, a missing field), `UnknownVersion` for a format version this release does not read
 */
export function decodeEntry(data: Uint8Array, seq: number): LogEntry {
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(data));
  } catch (cause) {
    throw new ReplicationError('BadLog', `log entry ${seq} is not JSON`, { cause });
  }
  const bad = (why: string) => new ReplicationError('BadLog', `log entry ${seq}: ${why}`);
  if (!isRecordLike(value) || !Number.isInteger(value['v'])) throw bad('not an entry { v: <format version>, type, id, … }');
  if (!READS_FORMATS.includes(value['v'] as number)) throw unknownFormat(`log entry ${seq}`, value['v']);
  if (typeof value['id'] !== 'string') throw bad('"id" must be a string');
  if (value['type'] === 'swarm.genesis') {
    if (!Array.isArray(value['profiles']) || !isRecordLike(value['config']) || !Number.isInteger(value['seed'])) throw bad('a genesis needs profiles, config and an integer seed');
  } else if (value['type'] === 'swarm.event') {
    if (!isRecordLike(value['event']) || typeof value['event']['type'] !== 'string') throw bad('"event" must be a lifecycle event { type, … }');
    if (value['basis'] !== undefined && !Number.isInteger(value['basis'])) throw bad('"basis" must be an integer sequence');
  } else {
    throw bad(`unknown type ${JSON.stringify(value['type'])}`);
  }
  return value as unknown as LogEntry;
}

/** The node a lifecycle event is about. */
export function eventNode(event: LifecycleEvent): string | undefined {
  const id = event.type === 'node.added' ? event.profile?.id : event.nodeId;
  return typeof id === 'string' ? id : undefined;
}
