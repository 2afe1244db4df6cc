/**
 * The KV block feed (docs/prefix-cache.md, "Precise mode"): what an engine that reports its cache
 * tells the router, as token-id blocks. Each event carries the engine's sequence number (1, 2, …
 * per engine epoch); a `stored` block names its engine hash, the hash of the block before it
 * (absent for a prompt's first) and its token ids, `blockSize` of them; `removed` names hashes;
 * `cleared` drops every block. A snapshot is the whole block set as of a sequence number. The
 * engine's hashes are opaque names: the router keys blocks on its own hash of the token ids.
 * Pure data and its check; platform-neutral.
 */

/** One block an engine holds: its hash (the engine's name for it), its parent's, its token ids. */
export interface KvBlock {
  readonly hash: string;
  /** The block before it; absent for the first block of a prompt. */
  readonly parent?: string;
  readonly tokens: readonly number[];
}

/** One change of an engine's cache. */
export type KvEvent =
  | { readonly seq: number; readonly kind: 'stored'; readonly model: string; readonly blocks: readonly KvBlock[] }
  | { readonly seq: number; readonly kind: 'removed'; readonly model: string; readonly hashes: readonly string[] }
  | { readonly seq: number; readonly kind: 'cleared' };

/** The engine's whole block set after event `seq`, each block after its parent. */
export interface KvSnapshot {
  readonly seq: number;
  readonly stored: readonly { readonly model: string; readonly blocks: readonly KvBlock[] }[];
}

/** What an agent sends (`POST /v1/nodes/:id/kv`): its engine's epoch and block size, the events since the last report, and a snapshot when asked for one. */
export interface KvReport {
  /** Changes when the engine restarts (its cache is then empty). */
  readonly epoch: string;
  readonly blockSize: number;
  readonly events: readonly KvEvent[];
  readonly snapshot?: KvSnapshot;
}

const HASH = /^[\x21-\x7e]{1,64}$/;

function blocksIssue(blocks: unknown, blockSize: number, where: string): string | undefined {
  if (!Array.isArray(blocks)) return `${where}: expected an array of blocks`;
  for (let i = 0; i < blocks.length; i++) {
    const b = blocks[i] as { hash?: unknown; parent?: unknown; tokens?: unknown } | null;
    const at = `${where}/${i}`;
    if (b === null || typeof b !== 'object') return `${at}: expected { hash, parent?, tokens }`;
    if (typeof b.hash !== 'string' || !HASH.test(b.hash)) return `${at}/hash: expected 1 to 64 printable ASCII characters`;
    if (b.parent !== undefined && (typeof b.parent !== 'string' || !HASH.test(b.parent))) return `${at}/parent: expected 1 to 64 printable ASCII characters`;
    const t = b.tokens;
    if (!Array.isArray(t) || t.length !== blockSize) return `${at}/tokens: expected ${blockSize} token ids (the block size)`;
    for (const id of t) if (!Number.isInteger(id) || (id as number) < 0 || (id as number) > 0x7fffffff) return `${at}/tokens: expected token ids, integers from 0 to 2^31 − 1`;
  }
  return undefined;
}

const isModel = (m: unknown): m is string => typeof m === 'string' && m.length > 0 && m.length <= 200;

/** Why `report` is not a {@link KvReport} (naming the field), or undefined when it is. */
export function kvReportIssue(report: unknown): string | undefined {
  if (report === null || typeof report !== 'object') return 'expected { epoch, blockSize, events, snapshot? }';
  const r = report as { epoch?: unknown; blockSize?: unknown; events?: unknown; snapshot?: unknown };
  if (typeof r.epoch !== 'string' || r.epoch.length === 0 || r.epoch.length > 100) return 'epoch: expected a string of 1 to 100 characters';
  if (!Number.isInteger(r.blockSize) || (r.blockSize as number) < 1 || (r.blockSize as number) > 4096) return 'blockSize: expected an integer from 1 to 4096';
  const size = r.blockSize as number;
  if (!Array.isArray(r.events)) return 'events: expected an array';
  let last = 0;
  for (let i = 0; i < r.events.length; i++) {
    const e = r.events[i] as { seq?: unknown; kind?: unknown; model?: unknown; blocks?: unknown; hashes?: unknown } | null;
    const at = `events/${i}`;
    if (e === null || typeof e !== 'object') return `${at}: expected an event`;
    if (!Number.isSafeInteger(e.seq) || (e.seq as number) <= last) return `${at}/seq: expected an integer above the previous event's`;
    last = e.seq as number;
    if (e.kind === 'cleared') continue;
    if (!isModel(e.model)) return `${at}/model: expected a model id`;
    if (e.kind === 'stored') {
      const issue = blocksIssue(e.blocks, size, `${at}/blocks`);
      if (issue !== undefined) return issue;
    } else if (e.kind === 'removed') {
      if (!Array.isArray(e.hashes) || e.hashes.some((h) => typeof h !== 'string' || !HASH.test(h))) return `${at}/hashes: expected block hashes`;
    } else return `${at}/kind: expected stored, removed or cleared`;
  }
  if (r.snapshot === undefined) return undefined;
  const s = r.snapshot as { seq?: unknown; stored?: unknown } | null;
  if (s === null || typeof s !== 'object') return 'snapshot: expected { seq, stored }';
  if (!Number.isSafeInteger(s.seq) || (s.seq as number) < 0) return 'snapshot/seq: expected a non-negative integer';
  if (!Array.isArray(s.stored)) return 'snapshot/stored: expected an array';
  for (let i = 0; i < s.stored.length; i++) {
    const g = s.stored[i] as { model?: unknown; blocks?: unknown } | null;
    if (g === null || typeof g !== 'object' || !isModel(g.model)) return `snapshot/stored/${i}/model: expected a model id`;
    const issue = blocksIssue(g.blocks, size, `snapshot/stored/${i}/blocks`);
    if (issue !== undefined) return issue;
  }
  return undefined;
}
