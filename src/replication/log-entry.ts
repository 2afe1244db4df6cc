import { isRecordLike } from '../core/describe.js';
import type { NodeProfile } from '../core/types.js';
import type { LifecycleEvent } from '../persistence/persisted.js';
import type { MoveEvent } from '../runtime/rebalance-hook.js';
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
  | {
      /**
       * A rebalance's move event (docs/rebalance.md "Replicas, serve and agents"): the decision
       * (`rebalance.begin` with its moves), a node's span loaded (or failed), a move's old copies drained.
       * Format version 3 only ({@link MOVES_FORMAT}).
       */
      readonly v: number;
      readonly type: 'swarm.rebalance';
      readonly id: string;
      readonly event: MoveEvent;
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
 * admission's state; version 3: version 2 with rebalance entries (`swarm.rebalance`), and
 * snapshots whose swarm may hold pending moves. Without the secret a replica reads and writes
 * version 1 only ({@link UNSIGNED_FORMATS}): it cannot check a signature.
 */
export const READS_FORMATS: readonly number[] = [1, 2, 3];

/** The format versions this release can write with the swarm secret, newest last. */
export const WRITES_FORMATS: readonly number[] = [1, 2, 3];

/** The least format version of a rebalance entry: a replica of the release before (reads 1, 2) halts on it, `UnknownVersion`. */
export const MOVES_FORMAT = 3;

/** What a replica without the swarm secret reads and writes. */
export const UNSIGNED_FORMATS: readonly number[] = [1];

/** The formats a replica reads and writes: with the secret, {@link READS_FORMATS}; without, {@link UNSIGNED_FORMATS}. */
export function formatsOf(signed: boolean): readonly number[] {
  return signed ? READS_FORMATS : UNSIGNED_FORMATS;
}

/** The error of a format version this release does not read: it names the version and the ones it reads. */
export function unknownFormat(what: string, version: unknown, reads: readonly number[] = UNSIGNED_FORMATS): ReplicationError {
  // Without the secret a replica reads only the unsigned versions: a signed one needs the secret, not an upgrade.
  const fix = READS_FORMATS.includes(version as number) && reads.every((v) => UNSIGNED_FORMATS.includes(v)) ? `version ${JSON.stringify(version)} is signed with the swarm secret: connect this replica with it (option "secret"; serve: --token-file)` : `upgrade it to a release that reads version ${JSON.stringify(version)}`;
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
  } else if (value['type'] === 'swarm.rebalance' && (value['v'] as number) >= MOVES_FORMAT) {
    const issue = moveEventIssue(value['event']);
    if (issue !== undefined) throw bad(issue);
  } else {
    throw bad(`unknown type ${JSON.stringify(value['type'])}`);
  }
  return value as unknown as LogEntry;
}

/** Why `event` is not a move event in its wire form, or undefined (the statechart checks the rest when applied). */
function moveEventIssue(event: unknown): string | undefined {
  if (!isRecordLike(event)) return '"event" must be a move event { type, … }';
  const text = (k: string) => typeof event[k] === 'string';
  if (event['type'] === 'rebalance.begin') return Array.isArray(event['moves']) && event['moves'].every((m) => isRecordLike(m) && typeof m['id'] === 'string' && Array.isArray(m['removes']) && Array.isArray(m['adds']) && Array.isArray(m['loading'])) ? undefined : 'a rebalance.begin needs "moves" [{ id, modelId, removes, adds, loading, breakFirst }]';
  if (event['type'] === 'span.loaded') return text('moveId') && text('nodeId') ? undefined : 'a span.loaded needs "moveId" and "nodeId"';
  if (event['type'] === 'span.failed') return text('moveId') && text('nodeId') && text('reason') ? undefined : 'a span.failed needs "moveId", "nodeId" and "reason"';
  if (event['type'] === 'copy.drained') return text('moveId') ? undefined : 'a copy.drained needs "moveId"';
  return `unknown move event ${JSON.stringify(event['type'])}`;
}

/** The node a lifecycle event is about. */
export function eventNode(event: LifecycleEvent): string | undefined {
  const id = event.type === 'node.added' ? event.profile?.id : event.nodeId;
  return typeof id === 'string' ? id : undefined;
}
