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
 * (`<replica>.<connection>.<n>.<random>`: its proposer, a random name of its connection, a counter,
 * a random name no one can guess before it is published) and is the publish's `Nats-Msg-Id`.
 */
export type LogEntry = (
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
    }
  | {
      /**
       * An agent id bound to its public key (`key`), or freed (`key: null`, the admin call):
       * format version 2 only (docs/replication.md, "Key bindings"). A bind of an id bound to
       * another key changes nothing: the first applied wins.
       */
      readonly v: number;
      readonly type: 'swarm.binding';
      readonly id: string;
      readonly nodeId: string;
      readonly key: string | null;
    }
) & {
  /** Version 2: when the writer signed it (its wall clock, ms since the epoch). */
  readonly at?: number;
  /** Version 2: the swarm secret's HMAC of the rest (log-signer.ts). */
  readonly sig?: string;
};

/**
 * The format versions of log entries and snapshots this release reads with the swarm secret.
 * Version 1: entries `{ v: 1, … }`, the KV snapshot `{ v: 1, … }` of a `persistSwarm` save;
 * version 2: the same signed (`at`, `sig`), key bindings, and snapshots with the bindings and the
 * admission's state. Without the secret a replica reads and writes version 1 only
 * ({@link UNSIGNED_FORMATS}): it cannot check a signature.
 */
export const READS_FORMATS: readonly number[] = [1, 2];

/** The format versions this release can write with the swarm secret, newest last. */
export const WRITES_FORMATS: readonly number[] = [1, 2];

/** What a replica without the swarm secret reads and writes. */
export const UNSIGNED_FORMATS: readonly number[] = [1];

/** The formats a replica reads and writes: with the secret, {@link READS_FORMATS}; without, {@link UNSIGNED_FORMATS}. */
export function formatsOf(signed: boolean): readonly number[] {
  return signed ? READS_FORMATS : UNSIGNED_FORMATS;
}

/** The error of a format version this release does not read: it names the version and the ones it reads. */
export function unknownFormat(what: string, version: unknown, reads: readonly number[] = UNSIGNED_FORMATS): ReplicationError {
  const fix = READS_FORMATS.includes(version as number) ? `version ${JSON.stringify(version)} is signed with the swarm secret: connect this replica with it (option "secret"; serve: --token-file)` : `upgrade it to a release that reads version ${JSON.stringify(version)}`;
  return new ReplicationError('UnknownVersion', `${what} is format version ${JSON.stringify(version)}; this replica reads version ${reads.join(', ')}: ${fix}`);
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
 * @throws {ReplicationError} `BadLog` for bytes no replica writes (not JSON, unknown type, a missing field), `UnknownVersion` for a format version not in `reads`
 */
export function decodeEntry(data: Uint8Array, seq: number, reads: readonly number[] = UNSIGNED_FORMATS): LogEntry {
  return checkEntry(parseEntry(data, seq), seq, reads);
}

/** A stream message's JSON. @throws {ReplicationError} `BadLog` when it is not JSON */
export function parseEntry(data: Uint8Array, seq: number): unknown {
  try {
    return JSON.parse(decoder.decode(data));
  } catch (cause) {
    throw new ReplicationError('BadLog', `log entry ${seq} is not JSON`, { cause });
  }
}

/**
 * The entry a stream message's JSON holds.
 * @throws {ReplicationError} `BadLog` for a shape no replica writes, `UnknownVersion` for a format version not in `reads`
 */
export function checkEntry(value: unknown, seq: number, reads: readonly number[] = UNSIGNED_FORMATS): LogEntry {
  const bad = (why: string) => new ReplicationError('BadLog', `log entry ${seq}: ${why}`);
  if (!isRecordLike(value) || !Number.isInteger(value['v'])) throw bad('not an entry { v: <format version>, type, id, … }');
  if (!reads.includes(value['v'] as number)) throw unknownFormat(`log entry ${seq}`, value['v'], reads);
  if (typeof value['id'] !== 'string') throw bad('"id" must be a string');
  if (value['type'] === 'swarm.genesis') {
    if (!Array.isArray(value['profiles']) || !isRecordLike(value['config']) || !Number.isInteger(value['seed'])) throw bad('a genesis needs profiles, config and an integer seed');
  } else if (value['type'] === 'swarm.event') {
    if (!isRecordLike(value['event']) || typeof value['event']['type'] !== 'string') throw bad('"event" must be a lifecycle event { type, … }');
    if (value['basis'] !== undefined && !Number.isInteger(value['basis'])) throw bad('"basis" must be an integer sequence');
  } else if (value['type'] === 'swarm.binding' && (value['v'] as number) >= 2) {
    if (typeof value['nodeId'] !== 'string' || !(value['key'] === null || typeof value['key'] === 'string')) throw bad('a binding needs a "nodeId" and a "key" (a public key, or null)');
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
