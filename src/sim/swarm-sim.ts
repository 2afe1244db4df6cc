/**
 * `swarm-sim` (docs/design.md §8): the whole lifecycle of a swarm in memory — start, failover of one node,
 * growth by a newcomer, the dead node's revival, and optionally a retirement — returned as one
 * plain JSON document. Pure: the copies the run adds are numbered (`hecate-8b/new-1`), or, with
 * `seed`, named by the seeded id source a seeded library swarm uses (`hecate-8b/fbVbbFiF2h`).
 */
import { PlanError, RoutingError, SwarmError } from '../core/errors.js';
import type { NodeProfile, Recovery, Route, SwarmPlan } from '../core/types.js';
import { copyTimes, type CopyTime } from '../core/per-token.js';
import { isIntact } from '../core/plan-index.js';
import { sharedThroughput } from '../core/shared-throughput.js';
import { baseModelId, validatePlan } from '../core/validate.js';
import { createSwarm } from '../runtime/index.js';
import type { GrowthRole, Relocation, SwarmOptions, SwarmStatus } from '../runtime/types.js';
import type { SwarmState } from '../core/state.js';
import { z } from 'zod';
import { ManualClock } from '../runtime/clock.js';
import { rebalancer } from '../rebalance/index.js';
import { InputError } from './input-error.js';
import { firstIssue, nodeProfileSchema, topologyFromValue, type Topology } from './topology.js';

const isFn = (v: unknown): boolean => typeof v === 'function';

/** What {@link SwarmSimOptions} may hold; unknown keys are ignored. */
const simOptionsSchema = z.object({
  kill: z.string().optional(),
  add: nodeProfileSchema.optional(),
  retire: z.string().optional(),
  rebalance: z.boolean().optional(),
  revive: z.boolean().optional(),
  model: z.string().optional(),
  tokens: z.int().min(0).max(1_000_000_000).optional(),
  seed: z.int().min(0).max(2 ** 32 - 1).optional(),
  source: z.string().optional(),
  pipelines: z.int().min(1).max(64).optional(),
  inspect: z.custom<NonNullable<SwarmOptions['inspect']>>((v) => isFn(v) || (v !== null && typeof v === 'object'), 'must be an XState inspection observer').optional(),
  onStep: z.custom<(step: SimStep, state: SwarmState) => void>(isFn, 'must be a function').optional(),
});

/**
 * Checks the arguments of the swarm-sim functions: the topology as {@link topologyFromValue}
 * accepts it (capacity aside) and the options' types.
 * @throws {InputError} naming the argument and the JSON path.
 */
function checkSimArgs(where: string, topology: unknown, options: unknown): { topology: Topology; options: SwarmSimOptions } {
  const t = topologyFromValue(topology, `${where}: topology`, { checkCapacity: false });
  if (!t.ok) throw t.error;
  if (options === null || typeof options !== 'object') throw new InputError(`${where}: options`, '$', 'must be an object of swarm-sim options');
  const o = simOptionsSchema.safeParse(options);
  if (!o.success) throw firstIssue(o.error.issues, `${where}: options`, '$');
  return { topology: t.value, options: o.data as SwarmSimOptions };
}

/** Options of {@link runSwarmSim}. */
export interface SwarmSimOptions {
  /** The node that fails. @defaultValue the first node of the initial route */
  readonly kill?: string;
  /** The newcomer of the growth step. @defaultValue a twin of the killed node, id `<kill>-2` */
  readonly add?: NodeProfile;
  /** Also retire this node in a last `retire` step (it may be the newcomer). */
  readonly retire?: string;
  /** End with a `rebalance` step (docs/rebalance.md), run to its end on the run's own clock. @defaultValue false */
  readonly rebalance?: boolean;
  /** Run the `revive` step (markAlive of the killed node). @defaultValue true */
  readonly revive?: boolean;
  /** Model whose route each step reports. @defaultValue the base model */
  readonly model?: string;
  /** Tokens of the request routed after each step. @defaultValue 512 */
  readonly tokens?: number;
  /**
   * Seeds the runtime's id source, so new copies get the ids a library swarm with this seed mints.
   * Without it they are numbered in the order the run adds them (`<model>/new-1`, …). Either way
   * the same options print the same bytes.
   */
  readonly seed?: number;
  /** Label of the topology in the output (its file). */
  readonly source?: string;
  /** `--pipelines`, echoed in the output (the topology already has it applied). */
  readonly pipelines?: number;
  /** An XState inspection observer for the Swarm actor and its node actors (`--inspect`). */
  readonly inspect?: SwarmOptions['inspect'];
  /** Called after each step with the swarm's plan and telemetry then (`--html` draws them). */
  readonly onStep?: (step: SimStep, state: SwarmState) => void;
}

/** An error a step ran into, as plain data. */
export interface SimError {
  readonly code: string;
  readonly message: string;
}

/** What every step reports. */
interface StepBase {
  readonly status: SwarmStatus;
  /** What the swarm serves for the model after the step; `null` with `routeError` when nothing. */
  readonly route: Route | null;
  readonly routeError?: SimError;
  /**
   * Every copy of the model with its per-token time (compute + hops, docs/cost.md) after the
   * step: the intact copy with the lowest is the route, so a reader sees why it was chosen.
   */
  readonly copies: readonly SimCopy[];
}

/**
 * One copy as swarm-sim reports it: its per-token time, and its `throughput` — the copy's rate
 * with every node's compute counted once across the intact copies of every model (docs/cost.md
 * "Counted once"; 0 for a broken copy), rounded to 4 decimals.
 */
export type SimCopy = CopyTime & { readonly throughput: number };

/** One step of the simulated lifecycle. */
export type SimStep =
  | (StepBase & { readonly step: 'start'; readonly pipelines: readonly string[] })
  | (StepBase & {
      readonly step: 'failover';
      readonly killed: string;
      /** The recovery of the reported model's route, or `null` when its route did not use the node. */
      readonly recovery: Recovery | null;
      /** Every recovery of the rescue (one per model whose route used the node). */
      readonly recoveries: readonly Recovery[];
      readonly unrecoverable: readonly string[];
    })
  | (StepBase & { readonly step: 'growth'; readonly added: NodeProfile; readonly role: GrowthRole; readonly modelId: string | null; readonly pipelines: readonly string[] })
  | (StepBase & { readonly step: 'revive'; readonly revived: string })
  | (StepBase & { readonly step: 'retire'; readonly retired: string; readonly relocated: readonly Relocation[]; readonly dropped: readonly string[] })
  | (StepBase & { readonly step: 'rebalance'; readonly moves: readonly SimMove[]; readonly layersMoved: number; readonly before: number; readonly after: number });

/** One move of a `rebalance` step: the copies it replaced, the copies it formed, what it loaded. */
export interface SimMove {
  readonly id: string;
  readonly kind: string;
  readonly modelId: string;
  readonly removes: readonly string[];
  readonly adds: readonly { readonly id: string; readonly nodes: readonly string[] }[];
  readonly layersMoved: number;
  readonly loadSeconds: number;
  /** Counted-once layer-passes per unit of time it gains. */
  readonly gain: number;
}

/** The document `swarm-sim` prints. */
export interface SwarmSimReport {
  readonly topology: string | null;
  readonly seed: number | null;
  readonly pipelines: number | null;
  readonly model: string;
  readonly tokens: number;
  readonly kill: string;
  readonly steps: readonly SimStep[];
  /** The plan at the end of the run. */
  readonly plan: SwarmPlan;
  /** `validatePlan` of the final plan against the final members is empty. */
  readonly planValid: boolean;
  readonly planIssues: readonly string[];
}

/**
 * Checks the options against the topology; the message names the flag and the problem.
 * @returns undefined when the options can run.
 * @throws {InputError} when the topology or options are not of the documented types.
 */
export function swarmSimOptionIssue(topology: Topology, options: SwarmSimOptions): string | undefined {
  checkSimArgs('swarmSimOptionIssue', topology, options);
  const ids = topology.nodes.map((n) => n.id);
  const list = ids.length > 12 ? `${ids.slice(0, 12).join(', ')}, …` : ids.join(', ');
  const where = options.source === undefined ? '' : ` in ${options.source}`;
  if (options.kill !== undefined && !ids.includes(options.kill)) return `--kill: unknown node "${options.kill}"${where} (nodes: ${list})`;
  if (options.add !== undefined && ids.includes(options.add.id)) return `--add: node "${options.add.id}" is already${where}; pick a new id`;
  if (options.retire !== undefined && !ids.includes(options.retire) && options.retire !== twinOf(topology, options, options.kill)?.id) {
    return `--retire: unknown node "${options.retire}"${where} (nodes: ${list}, or the newcomer)`;
  }
  const models = topology.models.map((m) => m.id);
  if (options.model !== undefined && !models.includes(options.model)) return `--model: unknown model "${options.model}"${where} (models: ${models.join(', ')})`;
  return undefined;
}

/**
 * The growth step's newcomer: `options.add`, else a twin of the killed node under a fresh id.
 * @throws {InputError} when the arguments are not of the documented types.
 */
export function newcomerOf(topology: Topology, options: SwarmSimOptions, kill?: string): NodeProfile | undefined {
  checkSimArgs('newcomerOf', topology, options);
  if (kill !== undefined && typeof kill !== 'string') throw new InputError('newcomerOf: kill', '', 'must be a node id (a string)');
  return twinOf(topology, options, kill ?? options.kill);
}

function twinOf(topology: Topology, options: SwarmSimOptions, kill: string | undefined): NodeProfile | undefined {
  if (options.add !== undefined) return options.add;
  const twin = topology.nodes.find((n) => n.id === kill);
  if (twin === undefined) return undefined;
  const taken = new Set(topology.nodes.map((n) => n.id));
  let i = 2;
  while (taken.has(`${twin.id}-${i}`)) i++;
  return { ...twin, id: `${twin.id}-${i}` };
}

/**
 * Runs start → failover (`kill`) → growth (`add`) → revive → retire (if asked), reporting after
 * each step the status and the route the swarm serves.
 * @throws {InputError} when the topology or options are not of the documented types;
 * {@link PlanError} or {@link SwarmError} when the topology or an option cannot run (the CLI checks first).
 * @example runSwarmSim(topology, { kill: 'gpu', seed: 1 }).steps.map((s) => s.status)
 */
export function runSwarmSim(topologyArg: Topology, optionsArg: SwarmSimOptions = {}): SwarmSimReport {
  const { topology, options } = checkSimArgs('runSwarmSim', topologyArg, optionsArg);
  const model = options.model ?? baseModelId(topology.models);
  const tokens = options.tokens ?? 512;
  const clock = options.rebalance === true ? new ManualClock(0) : undefined;
  const swarm = createSwarm(topology.nodes, { models: topology.models }, {
    // One run in memory: ids need to be unique within it only, so they can be read.
    ...(options.seed === undefined ? { idSource: numberedIds() } : { seed: options.seed }),
    ...(options.inspect === undefined ? {} : { inspect: options.inspect }),
    ...(clock === undefined ? {} : { clock, rebalancer: rebalancer() }),
  });
  const members = new Map(topology.nodes.map((n) => [n.id, n] as const));
  const serve = (): StepBase => {
    const status = swarm.status();
    const state = swarm.state();
    const intact = intactIds(state);
    const rates = sharedThroughput(state.plan, [...members.values()], { include: (id) => intact.has(id) }).copies;
    const copies = copyTimes(state, model).map((c) => ({ ...roundTimes(c), throughput: Math.round((rates.get(c.pipelineId) ?? 0) * 1e4) / 1e4 }));
    try {
      return { status, route: swarm.route({ model, tokens }), copies };
    } catch (error) {
      return { status, route: null, routeError: simError(error), copies };
    }
  };
  const steps: SimStep[] = [];
  const record = (step: SimStep): void => {
    steps.push(step);
    options.onStep?.(step, swarm.state());
  };
  try {
    const start = serve();
    record({ step: 'start', ...start, pipelines: swarm.state().plan.pipelines.map((p) => p.id) });

    const kill = options.kill ?? start.route?.stages[0]?.nodeId ?? topology.nodes[0]?.id ?? '';
    const rescue = swarm.markDown(kill);
    const recovery = rescue.recoveries.find((r) => r.modelId === model) ?? null;
    record({ step: 'failover', ...serve(), killed: kill, recovery, recoveries: rescue.recoveries, unrecoverable: rescue.unrecoverable });

    const newcomer = twinOf(topology, options, kill);
    if (newcomer !== undefined) {
      const growth = swarm.addNode(newcomer);
      members.set(newcomer.id, newcomer);
      record({ step: 'growth', ...serve(), added: newcomer, role: growth.role, modelId: growth.modelId ?? null, pipelines: growth.pipelines });
    }

    if (options.revive !== false) {
      swarm.markAlive(kill);
      record({ step: 'revive', ...serve(), revived: kill });
    }

    if (options.retire !== undefined) {
      const retirement = swarm.removeNode(options.retire);
      members.delete(options.retire);
      record({ step: 'retire', ...serve(), retired: options.retire, relocated: retirement.relocated, dropped: retirement.dropped });
    }

    if (clock !== undefined) {
      const r = swarm.rebalance();
      // Every span loads and every copy forms; nothing is in flight, so the old copies drain at once.
      clock.advance(Math.ceil(Math.max(0, ...r.moves.map((m) => m.loadSeconds)) * 1000) + 1);
      const r4 = (x: number) => Math.round(x * 1e4) / 1e4;
      const moves = r.moves.map((m): SimMove => ({ id: m.id, kind: m.kind, modelId: m.modelId, removes: m.removes, adds: m.adds.map((p) => ({ id: p.id, nodes: p.stages.map((s) => s.nodeId) })), layersMoved: m.layersMoved, loadSeconds: r4(m.loadSeconds), gain: r4(m.gain) }));
      record({ step: 'rebalance', ...serve(), moves, layersMoved: r.layersMoved, before: r4(r.before), after: r4(r.after) });
    }

    const plan = swarm.state().plan;
    const issues = validatePlan(plan, [...members.values()]).map((i) => i.message);
    return {
      topology: options.source ?? null,
      seed: options.seed ?? null,
      pipelines: options.pipelines ?? null,
      model,
      tokens,
      kill,
      steps,
      plan: JSON.parse(JSON.stringify(plan)) as SwarmPlan,
      planValid: issues.length === 0,
      planIssues: issues,
    };
  } finally {
    swarm.stop();
  }
}

/** The ids of the plan's intact copies (every node alive). */
function intactIds(state: SwarmState): Set<string> {
  return new Set(state.plan.pipelines.filter((p) => isIntact(p, state.nodes)).map((p) => p.id));
}

/** Per-token times to 0.01 ms: the output is for reading and diffing, not for recomputing costs. */
function roundTimes(c: CopyTime): CopyTime {
  const r = (x: number) => Math.round(x * 100) / 100;
  return { ...c, computeMs: r(c.computeMs), hopMs: r(c.hopMs), perTokenMs: r(c.perTokenMs) };
}

function simError(error: unknown): SimError {
  if (error instanceof RoutingError || error instanceof SwarmError || error instanceof PlanError) return { code: error.code, message: error.message };
  throw error;
}

/** `new-1`, `new-2`, …: the ids of an unseeded run, unique within it and readable in its report. */
function numberedIds(): () => string {
  let next = 0;
  return () => `new-${++next}`;
}
