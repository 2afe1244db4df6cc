import type { AutoMark } from '../../machines/swarm-context.js';
import type { NodeProfile } from '../core/types.js';
import type { SwarmConfig } from '../runtime/types.js';
import { ReplicationError } from './replication-error.js';

/**
 * What a replicated swarm's log holds (docs/replication.md), one JSON object per JetStream
 * message. The first entry is the genesis: the profiles, config and id seed every replica builds
 * its Swarm from. Every other entry is a proposal, applied by every replica in stream order;
 * `id` names it (`<replica>.<connection>.<n>`: its proposer, a random name of its connection, a counter) and is the publish's `Nats-Msg-Id`.
 */
export type LogEntry =
  | { readonly v: 1; readonly type: 'swarm.genesis'; readonly id: string; readonly profiles: readonly NodeProfile[]; readonly config: SwarmConfig; readonly seed: number }
  | { readonly v: 1; readonly type: 'node.added'; readonly id: string; readonly profile: NodeProfile }
  | { readonly v: 1; readonly type: 'node.removed'; readonly id: string; readonly nodeId: string }
  | { readonly v: 1; readonly type: 'node.down'; readonly id: string; readonly nodeId: string }
  | { readonly v: 1; readonly type: 'node.alive'; readonly id: string; readonly nodeId: string }
  /**
   * A mark a replica's node actor made on its own (detector, ejection, self-revival), decided on
   * the node's history up to the log sequence `basis`: applied only if no entry on that node was
   * applied since, so two detectors downing one node apply one down.
   */
  | { readonly v: 1; readonly type: 'node.mark'; readonly id: string; readonly mark: AutoMark; readonly basis: number };

/** A log entry without its version and id: what a replica proposes. */
export type Proposal = LogEntry extends infer E ? (E extends LogEntry ? Omit<E, 'v' | 'id'> : never) : never;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The entry's bytes on the stream. */
export function encodeEntry(entry: LogEntry): Uint8Array {
  return encoder.encode(JSON.stringify(entry));
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Whether a decoded mark is one a node actor makes. */
function isMark(v: unknown): v is AutoMark {
  if (!isRecord(v) || !isString(v['nodeId'])) return false;
  if (v['type'] === 'node.eject') return true;
  if (v['type'] === 'node.down') return v['cause'] === 'detector';
  return v['type'] === 'node.alive' && (v['cause'] === 'heartbeat' || v['cause'] === 'probation');
}

/**
 * A stream message's entry.
 * @throws {ReplicationError} `BadLog` for bytes no replica writes (not JSON, unknown type, a missing field)
 */
export function decodeEntry(data: Uint8Array, seq: number): LogEntry {
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(data));
  } catch (cause) {
    throw new ReplicationError('BadLog', `log entry ${seq} is not JSON`, { cause });
  }
  const bad = (why: string) => new ReplicationError('BadLog', `log entry ${seq}: ${why}`);
  if (!isRecord(value) || value['v'] !== 1) throw bad('not a version-1 entry { v: 1, type, id, … }');
  if (!isString(value['id'])) throw bad('"id" must be a string');
  switch (value['type']) {
    case 'swarm.genesis':
      if (!Array.isArray(value['profiles']) || !isRecord(value['config']) || !Number.isInteger(value['seed'])) throw bad('a genesis needs profiles, config and an integer seed');
      break;
    case 'node.added':
      if (!isRecord(value['profile'])) throw bad('"profile" must be an object');
      break;
    case 'node.removed':
    case 'node.down':
    case 'node.alive':
      if (!isString(value['nodeId'])) throw bad('"nodeId" must be a string');
      break;
    case 'node.mark':
      if (!isMark(value['mark']) || !Number.isInteger(value['basis'])) throw bad('a mark needs a node actor\'s mark and an integer basis');
      break;
    default:
      throw bad(`unknown type ${JSON.stringify(value['type'])}`);
  }
  return value as unknown as LogEntry;
}

/** The node an entry is about, if any. */
export function entryNode(entry: LogEntry): string | undefined {
  switch (entry.type) {
    case 'swarm.genesis':
      return undefined;
    case 'node.added':
      return entry.profile.id;
    case 'node.mark':
      return entry.mark.nodeId;
    default:
      return entry.nodeId;
  }
}
