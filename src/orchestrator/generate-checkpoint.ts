/**
 * An idempotent generation's checkpoint (docs/replication.md, "Generate checkpoints"): one JSON
 * record per idempotency key in a store another orchestrator can read — who holds the key and
 * until when, the steps done, the step inputs at layer 0 a resume replays, and once finished the
 * answer. Plain data; the store is a key-value map with compare-and-set ({@link CheckpointStore}).
 */
import { createHash } from 'node:crypto';
import type { GenerateRequest } from './generate-protocol.js';

/** The record's format version. */
export const CHECKPOINT_VERSION = 1;

/** One key's record. */
export interface CheckpointRecord {
  readonly v: typeof CHECKPOINT_VERSION;
  /** The request's fingerprint ({@link requestFingerprint}): a key reused for another request is refused. */
  readonly request: string;
  /** `running`: `owner` holds the key until `leaseUntil`; `paused`: nobody does (a cancel, a failure); `done`: `result` is the answer. */
  readonly state: 'running' | 'paused' | 'done';
  /** The orchestrator holding (or that last held) the key. */
  readonly owner: string;
  /** When the holder's claim ends unless renewed (ms, the orchestrators' clock). */
  readonly leaseUntil: number;
  /** Steps done and checkpointed. */
  readonly done: number;
  /** The step inputs at layer 0, `done + 1` of them (the last is the next step's input): 8 hex digits each. */
  readonly inputs: string;
  /** The answer, as the request's task keeps it (generation-task.ts, `stored`). */
  readonly result?: unknown;
}

/** A key-value map with compare-and-set: a JetStream KV bucket with a TTL, or one in memory. */
export interface CheckpointStore {
  /** Writes `value` if `key` holds nothing; its revision, or undefined when the key exists. */
  create(key: string, value: string): Promise<number | undefined>;
  /** The value and its revision, or undefined (never written, or past its TTL). */
  get(key: string): Promise<{ readonly value: string; readonly revision: number } | undefined>;
  /** Writes `value` if `key` is still at `revision`; the new revision, or undefined when it moved. */
  update(key: string, value: string, revision: number): Promise<number | undefined>;
  /** Removes `key` if it is still at `revision`; false when it moved. */
  remove(key: string, revision: number): Promise<boolean>;
  /** How long a record is kept after its last write. */
  readonly ttlMs: number;
  close(): Promise<void>;
}

/** Step inputs as the record holds them: 8 hex digits each, no separator. */
export function encodeInputs(inputs: readonly number[]): string {
  return inputs.map((x) => (x >>> 0).toString(16).padStart(8, '0')).join('');
}

/** The inverse of {@link encodeInputs}. */
export function decodeInputs(text: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < text.length; i += 8) out.push(Number.parseInt(text.slice(i, i + 8), 16));
  return out;
}

/** What identifies a request behind a key: a hash of its model, prompt and steps. */
export function requestFingerprint(request: GenerateRequest): string {
  return createHash('sha256').update(JSON.stringify([request.model, request.prompt, request.steps])).digest('hex').slice(0, 32);
}

/**
 * A stored record, checked.
 * @throws Error naming the key and the field when it is not a record this version wrote.
 */
export function parseCheckpoint(text: string, key: string): CheckpointRecord {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`checkpoint of key "${key}" is not JSON`);
  }
  const r = value as Partial<CheckpointRecord> | null;
  const bad = (field: string) => new Error(`checkpoint of key "${key}": field "${field}" is missing or malformed`);
  if (r === null || typeof r !== 'object') throw bad('body');
  if (r.v !== CHECKPOINT_VERSION) throw new Error(`checkpoint of key "${key}" has format version ${String(r.v)}; this orchestrator reads ${CHECKPOINT_VERSION}`);
  if (typeof r.request !== 'string') throw bad('request');
  if (r.state !== 'running' && r.state !== 'paused' && r.state !== 'done') throw bad('state');
  if (typeof r.owner !== 'string') throw bad('owner');
  if (typeof r.leaseUntil !== 'number') throw bad('leaseUntil');
  if (typeof r.done !== 'number' || !Number.isInteger(r.done) || r.done < 0) throw bad('done');
  if (typeof r.inputs !== 'string' || !/^[0-9a-f]*$/.test(r.inputs) || (r.state !== 'done' && r.inputs.length !== 8 * (r.done + 1))) throw bad('inputs');
  if (r.state === 'done' && (r.result === null || typeof r.result !== 'object')) throw bad('result');
  return r as CheckpointRecord;
}
