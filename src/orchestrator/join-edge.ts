/**
 * The orchestrator's options for its edges (docs/security.md, docs/serve.md "Limits"), and the
 * join checks they make: which hosts an agent's URL may name, the membership's maximum, the rate
 * of new ids per source, the grace of a join that never heartbeats, and the agents' work model.
 */
import { DEFAULT_FORGET_AFTER_MS, SilentJoins } from './forget-silent.js';
import { checkJoinUrl, JOIN_RATE, JoinGuard } from './join-guard.js';
import type { JoinBody } from '../wire/member-protocol.js';
import type { MemberBench } from './member-bench.js';
import type { OrchestratorParts } from './orchestrator-parts.js';
import { ServeError } from '../wire/serve-error.js';
import { DEFAULT_WORK, type WorkModel } from './work-bounds.js';

/** Options of the orchestrator's edges. */
export interface EdgeOptions {
  /** Hosts an agent's URL may name besides the address its join came from. @defaultValue none */
  readonly agentHosts?: readonly string[];
  /** Members at most (declared, waiting or joined). @defaultValue 1000, a topology file's limit */
  readonly maxNodes?: number;
  /** A joined agent with no heartbeat within this is forgotten. @defaultValue 30000 */
  readonly forgetAfterMs?: number;
  /** Joins of new ids per source address: `burst` at once, then one per `refillMs`. @defaultValue 30, 1000 */
  readonly joinRate?: { readonly burst: number; readonly refillMs: number };
  /** Real ms one layer takes for one token at score 1 on the agents (their `--per-layer-ms`). @defaultValue 2 */
  readonly perLayerMs?: number;
}

/** The checks of a join at the edge (join-guard.ts, forget-silent.ts); without them a join is believed as sent. */
export interface JoinEdge {
  readonly guard: JoinGuard;
  readonly silent: SilentJoins;
  readonly agentHosts: readonly string[];
  /** Members benched for unanswered stage calls: their heartbeats and joins do not revive them (member-bench.ts). */
  readonly bench?: MemberBench;
}

/** The default membership maximum: a topology file's nodes (docs/inputs.md, "Limits"; a test holds them equal). */
export const DEFAULT_MAX_NODES = 1000;

/** The join checks of an orchestrator with these options. */
export function createJoinEdge(parts: OrchestratorParts, options: EdgeOptions): JoinEdge {
  const rate = options.joinRate ?? JOIN_RATE;
  return {
    guard: new JoinGuard({ maxNodes: options.maxNodes ?? DEFAULT_MAX_NODES, burst: rate.burst, refillMs: rate.refillMs, ...(options.agentHosts !== undefined ? { agentHosts: options.agentHosts } : {}) }, parts.clock),
    silent: new SilentJoins(parts, options.forgetAfterMs ?? DEFAULT_FORGET_AFTER_MS),
    agentHosts: options.agentHosts ?? [],
  };
}

/** The agents' work model under these options. */
export function workModel(options: EdgeOptions): WorkModel {
  return options.perLayerMs === undefined ? DEFAULT_WORK : { ...DEFAULT_WORK, perLayerMs: options.perLayerMs };
}

/**
 * Before a join's signature is verified: a join of a new id from a source whose rate is spent is
 * refused at once (429 `RateLimited`), spending nothing; a known id, or a body without an id
 * (the schema names it next), goes on.
 * @throws {ServeError} 429 `RateLimited`
 */
export function refuseSpentSource(parts: OrchestratorParts, edge: JoinEdge, body: unknown, source: string, credential?: string): void {
  const id = (body as { id?: unknown } | null | undefined)?.id;
  if (typeof id !== 'string') return;
  const known = parts.registry.get(id);
  if (known !== undefined && !known.left) return;
  try {
    edge.guard.refuseIfExhausted(id, source, credential);
  } catch (error) {
    parts.metrics.joinsRefused.inc({ reason: 'rate' });
    throw error;
  }
}

/**
 * A join as the edge admits it: its URL reduced to scheme, host and port on the joiner's own
 * address (400 `url`), and a new id within its source network's and its `credential`'s (the
 * verified agent key that signed it) rates and the membership's maximum.
 * @throws {ServeError} 400 `InvalidRequest` (`url`), 429 `RateLimited`, 503 `Full`
 */
export function admitJoin(parts: OrchestratorParts, edge: JoinEdge, body: JoinBody, source: string, credential?: string): JoinBody {
  let url: string;
  try {
    url = checkJoinUrl(body.url, source, edge.agentHosts);
  } catch (error) {
    parts.metrics.joinsRefused.inc({ reason: 'url' });
    throw error;
  }
  const known = parts.registry.get(body.id);
  if (known === undefined || known.left) {
    try {
      edge.guard.admitNew(body.id, source, parts.registry.members(), credential);
    } catch (error) {
      parts.metrics.joinsRefused.inc({ reason: error instanceof ServeError && error.code === 'Full' ? 'full' : 'rate' });
      throw error;
    }
  }
  return { ...body, url };
}
