/**
 * Scenarios: a topology plus a list of steps (`kill`, `revive`, `add`, `remove`, `report`,
 * `route`, `rebalance`, `stop`), each with optional expectations, run against the real runtime. Pure: the
 * CLI reads the files; this module validates the JSON and returns one result per expectation.
 */
import { z } from 'zod';
import { PlanError, RoutingError, SwarmError } from '../core/errors.js';
import type { NodeProfile, Recovery, Route } from '../core/types.js';
import { baseModelId, validatePlan } from '../core/validate.js';
import { createSwarm, ManualClock } from '../runtime/index.js';
import { rebalancer } from '../rebalance/index.js';
import type { SwarmStatus } from '../runtime/types.js';
import { describeValue } from '../core/describe.js';
import { InputError, parseJsonText, type Loaded } from './input-error.js';
import { firstIssue, nodeProfileSchema, topologyFromValue, type Topology } from './topology.js';

const nodeId = z.string().min(1, 'must be a non-empty node id');
const errorCodes = [
  'UnknownModel',
  'NoHealthyPipeline',
  'Unrecoverable',
  'InvalidRequest',
  'InvalidInput',
  'InsufficientCapacity',
  'InvalidPlan',
  'UnknownNode',
  'DuplicateNode',
  'Stopped',
  'BadTelemetry',
  'UnknownLease',
] as const;

/** What a step may expect. Every field is optional; each one given is checked and reported. */
export const expectationSchema = z.strictObject({
  /** `swarm.status()` after the step. */
  status: z.enum(['healthy', 'degraded', 'failed', 'stopped']).optional(),
  /** The step must throw an error with this code (RoutingError, SwarmError or PlanError). */
  error: z.enum(errorCodes).optional(),
  /** Which model's route/recovery the route expectations look at (base model by default). */
  model: z.string().min(1).optional(),
  /** kill: the strategy of the model's recovery. */
  strategy: z.enum(['unaffected', 'copy', 'splice', 'degraded']).optional(),
  /** The route's `modelId` (the reserve model for a degraded route). */
  modelId: z.string().min(1).optional(),
  /** The route's `pipelineId`. */
  pipelineId: z.string().min(1).optional(),
  /** The route's `degraded` flag. */
  degraded: z.boolean().optional(),
  /** Nodes the route must not use. */
  avoid: z.array(nodeId).optional(),
  /** Nodes the route must use. */
  use: z.array(nodeId).optional(),
  /** kill: number of layers the recovery is missing. */
  missingLayers: z.int().min(0).optional(),
  /** kill: number of ranges a splice re-served. */
  replaced: z.int().min(0).optional(),
  /** kill: the models left with nothing to serve with, in any order. */
  unrecoverable: z.array(z.string().min(1)).optional(),
  /** add: the role the growth policy gave the newcomer. */
  role: z.enum(['restore', 'copy', 'expert', 'spare']).optional(),
  /** add: the model the newcomer serves (`null`: none, a spare). */
  growthModel: z.string().min(1).nullable().optional(),
  /** remove: number of ranges relocated to other nodes. */
  relocated: z.int().min(0).optional(),
  /** remove: number of pipelines dropped because they could not be rebuilt. */
  dropped: z.int().min(0).optional(),
  /** rebalance: number of moves made (docs/rebalance.md). */
  moves: z.int().min(0).optional(),
  /** The plan validates against the live profiles after the step. Checked on every step; `false` expects an invalid plan. */
  planValid: z.boolean().optional(),
});

/** Expectations of one step. */
export type Expectation = z.infer<typeof expectationSchema>;

const common = { expect: expectationSchema.optional(), note: z.string().optional() };
const sampleNumber = z.number();

/** One step of a scenario, told apart by its `step` field. */
export const scenarioStepSchema = z.discriminatedUnion('step', [
  z.strictObject({ step: z.literal('kill'), node: nodeId, ...common }),
  z.strictObject({ step: z.literal('revive'), node: nodeId, ...common }),
  z.strictObject({ step: z.literal('add'), node: nodeProfileSchema, ...common }),
  z.strictObject({ step: z.literal('remove'), node: nodeId, ...common }),
  z.strictObject({
    step: z.literal('report'),
    node: nodeId,
    sample: z.strictObject({ load: sampleNumber.optional(), latencyMs: sampleNumber.optional(), score: sampleNumber.optional() }),
    ...common,
  }),
  z.strictObject({ step: z.literal('route'), model: z.string().min(1).optional(), tokens: z.int().min(0).optional(), ...common }),
  z.strictObject({ step: z.literal('stop'), ...common }),
  // A rebalance, run to its end: its spans load in modelled time on the scenario's own clock (docs/rebalance.md).
  z.strictObject({ step: z.literal('rebalance'), minGain: z.number().gt(0).max(1).optional(), ...common }),
]);

/** One step of a scenario. */
export type ScenarioStep = z.infer<typeof scenarioStepSchema>;

/** Most steps a scenario may have: each is a swarm operation, and a file must not run for hours. */
export const SCENARIO_MAX_STEPS = 100;

/** Schema of a scenario file. `topology` is inline, or a path relative to the scenario file. */
export const scenarioSchema = z.strictObject({
  name: z.string().min(1),
  description: z.string().optional(),
  // Not z.record: it would drop a "__proto__" key instead of letting the topology schema name it.
  topology: z.union([z.string().min(1), z.custom<Record<string, unknown>>((v) => v !== null && typeof v === 'object' && !Array.isArray(v), 'must be a topology object or a file path')]),
  /** Sets the number of copies of every model. */
  pipelines: z.int().min(1).max(64).optional(),
  /** Swarm policy: serve survivors rather than fail (SwarmConfig.allowDegraded). @defaultValue true */
  allowDegraded: z.boolean().optional(),
  /** Seed of the id source. @defaultValue 1 */
  seed: z.int().min(0).optional(),
  steps: z.array(scenarioStepSchema).min(1, 'a scenario needs at least one step').max(SCENARIO_MAX_STEPS, `at most ${SCENARIO_MAX_STEPS} steps (docs/inputs.md)`),
});

/** A parsed scenario file; `topology` still unresolved when it is a path. */
export type ScenarioFile = z.infer<typeof scenarioSchema>;

/** A validated scenario, ready to run. */
export interface Scenario {
  readonly file: string;
  readonly name: string;
  readonly description?: string;
  readonly topology: Topology;
  readonly allowDegraded?: boolean;
  readonly seed: number;
  readonly steps: readonly ScenarioStep[];
}

/**
 * Parses and validates a scenario file's text. Never throws.
 * @param resolveTopology loads a topology named by path (relative to the scenario file); the CLI does the IO.
 */
export function loadScenario(text: string, file: string, resolveTopology: (path: string, options: { pipelines?: number }) => Loaded<Topology>): Loaded<Scenario> {
  if (typeof resolveTopology !== 'function') return { ok: false, error: new InputError(file, '', `loadScenario needs a function to load topology files, got ${describeValue(resolveTopology)}`) };
  const json = parseJsonText(text, file);
  if (!json.ok) return json;
  const parsed = scenarioSchema.safeParse(json.value);
  if (!parsed.success) return { ok: false, error: firstIssue(parsed.error.issues, file, '$') };
  const s = parsed.data;
  const options = s.pipelines === undefined ? {} : { pipelines: s.pipelines };
  const topology: unknown = typeof s.topology === 'string' ? resolveTopology(s.topology, options) : topologyFromValue(s.topology, file, { ...options, at: '$.topology' });
  if (!isLoaded(topology)) return { ok: false, error: new InputError(file, '$.topology', 'the topology loader returned neither { ok: true, value } nor { ok: false, error }') };
  if (!topology.ok) return topology;
  return {
    ok: true,
    value: {
      file,
      name: s.name,
      ...(s.description === undefined ? {} : { description: s.description }),
      topology: topology.value,
      ...(s.allowDegraded === undefined ? {} : { allowDegraded: s.allowDegraded }),
      seed: s.seed ?? 1,
      steps: s.steps,
    },
  };
}

function isLoaded(v: unknown): v is Loaded<Topology> {
  if (v === null || typeof v !== 'object') return false;
  const l = v as { ok?: unknown; value?: unknown; error?: unknown };
  return l.ok === true ? topologyFromValue(l.value, 'topology', { checkCapacity: false }).ok : l.ok === false && l.error instanceof InputError;
}

/** What {@link runScenario} accepts: a validated scenario as {@link loadScenario} returns it. */
const runnableSchema = z.object({
  file: z.string(),
  name: z.string(),
  topology: z.unknown(),
  allowDegraded: z.boolean().optional(),
  seed: z.int().min(0).max(2 ** 32 - 1),
  steps: scenarioSchema.shape.steps,
});

/** One checked expectation. */
export interface ExpectationResult {
  /** What was checked, e.g. `status`, `avoid gpu`, `no error`. */
  readonly name: string;
  readonly expected: unknown;
  readonly actual: unknown;
  readonly pass: boolean;
  /** Checked on every step without being written: no unexpected error, plan valid. */
  readonly implicit: boolean;
}

/** What one step did and how its expectations fared. */
export interface StepResult {
  readonly index: number;
  /** Human label: `kill gpu`, `route hecate-8b`. */
  readonly label: string;
  readonly note?: string;
  readonly pass: boolean;
  readonly expectations: readonly ExpectationResult[];
}

/** The outcome of one scenario. Plain data. */
export interface ScenarioResult {
  readonly file: string;
  readonly name: string;
  readonly pass: boolean;
  readonly steps: readonly StepResult[];
}

/** What a step produced, for the checks. */
interface Outcome {
  route?: Route;
  recovery?: Recovery;
  unrecoverable?: readonly string[];
  role?: string;
  growthModel?: string | null;
  relocated?: number;
  dropped?: number;
  moves?: number;
  error?: { code: string; message: string };
}

type Swarm = ReturnType<typeof createSwarm>;

/**
 * Runs a scenario against the real runtime (`createSwarm`), step by step, and checks every
 * expectation. A step that throws is recorded, not propagated: the run goes on.
 * @throws {InputError} when `scenario` is not a scenario as {@link loadScenario} returns it.
 */
export function runScenario(scenarioArg: Scenario): ScenarioResult {
  const scenario = checkScenario(scenarioArg);
  const profiles = new Map<string, NodeProfile>(scenario.topology.nodes.map((n) => [n.id, n]));
  const config = { models: scenario.topology.models, ...(scenario.allowDegraded === undefined ? {} : { allowDegraded: scenario.allowDegraded }) };
  const clock = new ManualClock(0);
  const swarm = createSwarm(scenario.topology.nodes, config, { seed: scenario.seed, clock, rebalancer: rebalancer() });
  const base = baseModelId(scenario.topology.models);
  const steps = scenario.steps.map((step, index): StepResult => {
    const outcome = perform(swarm, step, base, profiles, clock);
    const expectations = check(swarm, step, outcome, base, profiles);
    return { index, label: labelOf(step), ...(step.note === undefined ? {} : { note: step.note }), pass: expectations.every((e) => e.pass), expectations };
  });
  return { file: scenario.file, name: scenario.name, pass: steps.every((s) => s.pass), steps };
}

function checkScenario(value: unknown): Scenario {
  if (value === null || typeof value !== 'object') throw new InputError('runScenario', '$', `needs a scenario as loadScenario returns it, got ${describeValue(value)}`);
  const parsed = runnableSchema.safeParse(value);
  if (!parsed.success) throw firstIssue(parsed.error.issues, 'runScenario', '$');
  const topology = topologyFromValue(parsed.data.topology, 'runScenario', { at: '$.topology' });
  if (!topology.ok) throw topology.error;
  const s = parsed.data;
  return { ...s, topology: topology.value } as Scenario;
}

function labelOf(step: ScenarioStep): string {
  switch (step.step) {
    case 'kill':
    case 'revive':
    case 'remove':
      return `${step.step} ${step.node}`;
    case 'add':
      return `add ${step.node.id}`;
    case 'report':
      return `report ${step.node} ${JSON.stringify(step.sample)}`;
    case 'route':
      return `route${step.model === undefined ? '' : ` ${step.model}`}${step.tokens === undefined ? '' : ` (${step.tokens} tokens)`}`;
    case 'stop':
      return 'stop';
    case 'rebalance':
      return `rebalance${step.minGain === undefined ? '' : ` (minGain ${step.minGain})`}`;
  }
}

function perform(swarm: Swarm, step: ScenarioStep, base: string, profiles: Map<string, NodeProfile>, clock: ManualClock): Outcome {
  const model = step.expect?.model ?? base;
  try {
    switch (step.step) {
      case 'kill': {
        const rescue = swarm.markDown(step.node);
        const recovery = rescue.recoveries.find((r) => r.modelId === model);
        return { ...(recovery === undefined ? {} : { recovery, route: recovery.route }), unrecoverable: rescue.unrecoverable };
      }
      case 'revive':
        swarm.markAlive(step.node);
        return {};
      case 'add': {
        const growth = swarm.addNode(step.node);
        profiles.set(step.node.id, step.node);
        return { role: growth.role, growthModel: growth.modelId ?? null };
      }
      case 'remove': {
        const retirement = swarm.removeNode(step.node);
        profiles.delete(step.node);
        return { relocated: retirement.relocated.length, dropped: retirement.dropped.length };
      }
      case 'report':
        swarm.report(step.node, step.sample);
        return {};
      case 'route':
        return { route: swarm.route({ ...(step.model === undefined ? {} : { model: step.model }), ...(step.tokens === undefined ? {} : { tokens: step.tokens }) }) };
      case 'stop':
        swarm.stop();
        return {};
      case 'rebalance': {
        const r = swarm.rebalance(step.minGain === undefined ? undefined : { minGain: step.minGain });
        // Every span loads, every copy forms; nothing is in flight, so the old copies drain at once.
        clock.advance(Math.ceil(Math.max(0, ...r.moves.map((m) => m.loadSeconds)) * 1000) + 1);
        return { moves: r.moves.length };
      }
    }
  } catch (error) {
    return { error: describeError(error) };
  }
}

function describeError(error: unknown): { code: string; message: string } {
  if (error instanceof RoutingError || error instanceof SwarmError || error instanceof PlanError) return { code: error.code, message: error.message };
  // Not a domain error: a runtime bug. Reported as such so the expectation fails visibly.
  return { code: error instanceof Error ? `uncaught ${error.name}` : 'uncaught', message: error instanceof Error ? error.message : String(error) };
}

const ROUTE_FIELDS = ['modelId', 'pipelineId', 'degraded', 'avoid', 'use'] as const;

function check(swarm: Swarm, step: ScenarioStep, outcome: Outcome, base: string, profiles: Map<string, NodeProfile>): ExpectationResult[] {
  const want: Expectation = step.expect ?? {};
  const results: ExpectationResult[] = [];
  const add = (name: string, expected: unknown, actual: unknown, pass: boolean, implicit = false) => results.push({ name, expected, actual, pass, implicit });
  const actualError = outcome.error === undefined ? null : `${outcome.error.code}: ${outcome.error.message}`;

  if (want.error !== undefined) add('error', want.error, actualError ?? 'no error', outcome.error?.code === want.error);
  else add('no error', 'none', actualError, outcome.error === undefined, true);

  const status = statusOf(swarm);
  if (want.status !== undefined) add('status', want.status, status, status === want.status);

  // The route the expectations look at: the step's own (route, recovery), else the one the swarm serves now.
  let route = outcome.route;
  let routeError: string | undefined;
  const needsRoute = ROUTE_FIELDS.some((f) => want[f] !== undefined);
  if (needsRoute && route === undefined && outcome.error === undefined) {
    const model = want.model ?? (step.step === 'route' ? step.model : undefined) ?? base;
    try {
      route = swarm.route({ model });
    } catch (error) {
      const e = describeError(error);
      routeError = `no route (${e.code}: ${e.message})`;
    }
  }
  const nodes = route?.stages.map((s) => s.nodeId);
  const routeActual = (value: unknown) => (route === undefined ? (routeError ?? actualError ?? 'no route') : value);
  if (want.modelId !== undefined) add('route.modelId', want.modelId, routeActual(route?.modelId), route?.modelId === want.modelId);
  if (want.pipelineId !== undefined) add('route.pipelineId', want.pipelineId, routeActual(route?.pipelineId), route?.pipelineId === want.pipelineId);
  if (want.degraded !== undefined) add('route.degraded', want.degraded, routeActual(route?.degraded), route?.degraded === want.degraded);
  for (const n of want.avoid ?? []) add(`route avoids ${n}`, `not ${n}`, routeActual(nodes), nodes !== undefined && !nodes.includes(n));
  for (const n of want.use ?? []) add(`route uses ${n}`, n, routeActual(nodes), nodes !== undefined && nodes.includes(n));

  const recovery = outcome.recovery;
  const noRecovery = outcome.error === undefined ? 'no recovery (the route did not use the node)' : actualError;
  if (want.strategy !== undefined) add('recovery.strategy', want.strategy, recovery?.strategy ?? noRecovery, recovery?.strategy === want.strategy);
  if (want.missingLayers !== undefined) {
    const missing = recovery?.missingLayers.reduce((s, r) => s + (r.layerEnd - r.layerStart), 0);
    add('recovery.missingLayers', want.missingLayers, missing ?? noRecovery, missing === want.missingLayers);
  }
  if (want.replaced !== undefined) add('recovery.replaced', want.replaced, recovery?.replaced.length ?? noRecovery, recovery?.replaced.length === want.replaced);
  if (want.unrecoverable !== undefined) {
    const actual = outcome.unrecoverable === undefined ? null : [...outcome.unrecoverable].sort();
    add('unrecoverable', [...want.unrecoverable].sort(), actual ?? actualError, JSON.stringify(actual) === JSON.stringify([...want.unrecoverable].sort()));
  }
  if (want.role !== undefined) add('growth.role', want.role, outcome.role ?? actualError, outcome.role === want.role);
  if (want.growthModel !== undefined) add('growth.modelId', want.growthModel, outcome.growthModel ?? actualError, outcome.growthModel === want.growthModel);
  if (want.relocated !== undefined) add('retirement.relocated', want.relocated, outcome.relocated ?? actualError, outcome.relocated === want.relocated);
  if (want.dropped !== undefined) add('retirement.dropped', want.dropped, outcome.dropped ?? actualError, outcome.dropped === want.dropped);
  if (want.moves !== undefined) add('rebalance.moves', want.moves, outcome.moves ?? actualError, outcome.moves === want.moves);

  // docs/design.md §7: the plan validates after every operation.
  if (status !== 'stopped') {
    const issues = planIssues(swarm, profiles);
    const valid = issues.length === 0;
    add('plan valid', want.planValid ?? true, valid ? true : issues, valid === (want.planValid ?? true), want.planValid === undefined);
  }
  return results;
}

function statusOf(swarm: Swarm): SwarmStatus | string {
  try {
    return swarm.status();
  } catch (error) {
    if (error instanceof SwarmError && error.code === 'Stopped') return 'stopped';
    return `error: ${describeError(error).message}`;
  }
}

function planIssues(swarm: Swarm, profiles: Map<string, NodeProfile>): string[] {
  try {
    return validatePlan(swarm.state().plan, [...profiles.values()]).map((i) => i.message);
  } catch (error) {
    return [`cannot read the state: ${describeError(error).message}`];
  }
}
