import { describeValue } from './describe.js';
import { PlanError } from './errors.js';
import type { ModelSpec, NodeProfile, SwarmPlan } from './types.js';

/** What is wrong with a plan, a profile or a model. */
export type PlanIssueCode =
  | 'BadProfile'
  | 'DuplicateNode'
  | 'BadModel'
  | 'DuplicateModel'
  | 'UnknownModel'
  | 'UnknownNode'
  | 'DuplicatePipeline'
  | 'BadStage'
  | 'Gap'
  | 'Overlap'
  | 'Coverage'
  | 'SharedNode'
  | 'OverCapacity';

/** One problem found by {@link validatePlan}; `message` names the culprit. */
export interface PlanIssue {
  readonly code: PlanIssueCode;
  readonly message: string;
  readonly modelId?: string;
  readonly pipelineId?: string;
  readonly nodeId?: string;
}

/**
 * What {@link planSwarm} accepts at most, so that no input makes it run for hours: layers per
 * model and copies per model (docs/inputs.md). The CLI's topology limits are lower.
 */
export const PLAN_LIMITS = { layers: 100_000, pipelines: 1_000, kvReserveGb: 1_000_000 } as const;

const isFiniteAtLeast = (v: unknown, min: number): v is number => typeof v === 'number' && Number.isFinite(v) && v >= min;
const isPositiveInt = (v: unknown): v is number => Number.isInteger(v) && (v as number) > 0;

/** Checks node profiles: ids present and unique, memory finite and >= 0, score > 0, latency >= 0. */
export function profileIssues(profiles: readonly NodeProfile[]): PlanIssue[] {
  const issues: PlanIssue[] = [];
  if (!Array.isArray(profiles)) return [{ code: 'BadProfile', message: 'profiles must be an array of NodeProfile' }];
  const seen = new Set<string>();
  // Array.from visits the holes of a sparse array (as undefined), which forEach would skip.
  Array.from(profiles as readonly (NodeProfile | undefined)[]).forEach((p, i) => {
    if (p === null || typeof p !== 'object' || typeof p.id !== 'string' || p.id.length === 0) {
      issues.push({ code: 'BadProfile', message: `node #${i}: "id" must be a non-empty string` });
      return;
    }
    const nodeId = p.id;
    if (seen.has(nodeId)) issues.push({ code: 'DuplicateNode', nodeId, message: `node "${nodeId}" is listed twice` });
    seen.add(nodeId);
    const bad = (field: 'memoryGb' | 'score' | 'latencyMs' | 'slots' | 'loadGbPerSecond', rule: string) => issues.push({ code: 'BadProfile', nodeId, message: `node "${nodeId}": "${field}" must be ${rule}, got ${describeValue(p[field])}` });
    if (!isFiniteAtLeast(p.memoryGb, 0)) bad('memoryGb', 'a finite number >= 0');
    if (p.score !== undefined && !(isFiniteAtLeast(p.score, 0) && p.score > 0)) bad('score', 'a finite number > 0');
    if (p.latencyMs !== undefined && !isFiniteAtLeast(p.latencyMs, 0)) bad('latencyMs', 'a finite number >= 0');
    if (p.slots !== undefined && !isPositiveInt(p.slots)) bad('slots', 'a positive integer');
    if (p.loadGbPerSecond !== undefined && !(isFiniteAtLeast(p.loadGbPerSecond, 0) && p.loadGbPerSecond > 0)) bad('loadGbPerSecond', 'a finite number > 0');
  });
  return issues;
}

/** Checks model specs: ids unique, layers a positive integer, layerGb > 0, copies >= 1, fallback known. */
export function modelIssues(models: readonly ModelSpec[]): PlanIssue[] {
  const issues: PlanIssue[] = [];
  if (!Array.isArray(models) || models.length === 0) {
    return [{ code: 'BadModel', message: 'at least one model is required' }];
  }
  const ids = new Set<string>();
  let bases = 0;
  Array.from(models as readonly (ModelSpec | undefined)[]).forEach((m, i) => {
    if (m === null || typeof m !== 'object' || typeof m.id !== 'string' || m.id.length === 0) {
      issues.push({ code: 'BadModel', message: `model #${i}: "id" must be a non-empty string` });
      return;
    }
    const modelId = m.id;
    if (ids.has(modelId)) issues.push({ code: 'DuplicateModel', modelId, message: `model "${modelId}" is listed twice` });
    ids.add(modelId);
    const bad = (field: 'layers' | 'layerGb' | 'pipelines' | 'stageFactor' | 'kvReserveGb' | 'kvGbPerToken' | 'kind', rule: string) => issues.push({ code: 'BadModel', modelId, message: `model "${modelId}": "${field}" must be ${rule}, got ${describeValue(m[field])}` });
    if (!isPositiveInt(m.layers) || m.layers > PLAN_LIMITS.layers) bad('layers', `an integer from 1 to ${PLAN_LIMITS.layers}`);
    if (m.layerGb !== undefined && !(isFiniteAtLeast(m.layerGb, 0) && m.layerGb > 0)) bad('layerGb', 'a finite number > 0');
    if (m.pipelines !== undefined && (!isPositiveInt(m.pipelines) || m.pipelines > PLAN_LIMITS.pipelines)) bad('pipelines', `an integer from 1 to ${PLAN_LIMITS.pipelines}`);
    if (m.stageFactor !== undefined && !(isFiniteAtLeast(m.stageFactor, 1) && m.stageFactor <= PLAN_LIMITS.layers)) bad('stageFactor', `a finite number from 1 to ${PLAN_LIMITS.layers}`);
    if (m.kvReserveGb !== undefined && !(isFiniteAtLeast(m.kvReserveGb, 0) && m.kvReserveGb <= PLAN_LIMITS.kvReserveGb)) bad('kvReserveGb', `a finite number from 0 to ${PLAN_LIMITS.kvReserveGb}`);
    if (m.kvGbPerToken !== undefined && !(isFiniteAtLeast(m.kvGbPerToken, 0) && m.kvGbPerToken > 0 && m.kvGbPerToken <= 1)) bad('kvGbPerToken', 'a finite number > 0 and <= 1 (GB per token)');
    if (m.kind !== undefined && m.kind !== 'base' && m.kind !== 'expert') bad('kind', '"base" or "expert"');
    if (modelKind(models, i) === 'base') bases++;
  });
  if (bases > 1) issues.push({ code: 'BadModel', message: `only one model may be "base", found ${bases}` });
  for (const m of Array.from(models as readonly (ModelSpec | undefined)[])) {
    if (m === undefined || m === null || typeof m !== 'object' || typeof m.id !== 'string') continue;
    if (m.fallback !== undefined && (typeof m.fallback !== 'string' || !ids.has(m.fallback) || m.fallback === m.id)) {
      issues.push({ code: 'BadModel', modelId: m.id, message: `model "${m.id}": "fallback" must name another model of the plan, got ${describeValue(m.fallback)}` });
    }
  }
  return issues;
}

/** The kind of the model at `index`: declared, else 'base' for the first and 'expert' for the rest. */
export function modelKind(models: readonly ModelSpec[], index: number): 'base' | 'expert' {
  const m: unknown = models[index];
  const kind = m !== null && typeof m === 'object' ? (m as ModelSpec).kind : undefined;
  return kind ?? (index === 0 ? 'base' : 'expert');
}

/**
 * The id of the model `route()` serves by default: the base model, else the first.
 * @throws {PlanError} `InvalidInput` when `models` is not a valid list of model specs.
 */
export function baseModelId(models: readonly ModelSpec[]): string {
  const issues = modelIssues(models);
  if (issues.length > 0) throw new PlanError('InvalidInput', issues.map((i) => i.message).join('; '));
  const index = models.findIndex((_, i) => modelKind(models, i) === 'base');
  const model = models[index === -1 ? 0 : index];
  if (model === undefined) throw new PlanError('InvalidInput', 'the plan has no model');
  return model.id;
}

/** Memory `layers` layers of `model` need, in GB: their weights plus the KV cache they reserve (`kvReserveGb`). */
export function layersGb(model: ModelSpec, layers: number): number {
  return layers * ((model.layerGb ?? 1) + (model.kvReserveGb ?? 0));
}

/**
 * Checks a plan against the node profiles: every pipeline covers `[0, layers)` of a known
 * model in order with no gap or overlap, on known nodes, copies of one model on disjoint
 * nodes, and no node holding more than its memory. An empty result means valid.
 */
export function validatePlan(plan: SwarmPlan, profiles: readonly NodeProfile[]): PlanIssue[] {
  return checkPlan(plan, profiles);
}

/**
 * The issues of a plan that need no node profile: models, stage ranges (gap, overlap,
 * coverage) and disjoint copies. Memory and unknown nodes are not checked.
 */
export function planShapeIssues(plan: SwarmPlan): PlanIssue[] {
  return checkPlan(plan, undefined);
}

function checkPlan(plan: SwarmPlan, profiles: readonly NodeProfile[] | undefined): PlanIssue[] {
  if (plan === null || typeof plan !== 'object' || !Array.isArray(plan.pipelines)) {
    return [{ code: 'BadStage', message: 'a plan must be an object { models, pipelines }' }];
  }
  const issues: PlanIssue[] = [...(profiles === undefined ? [] : profileIssues(profiles)), ...modelIssues(plan.models)];
  const models = new Map<string, ModelSpec>();
  for (const m of Array.isArray(plan.models) ? plan.models : []) if (m && typeof m.id === 'string') models.set(m.id, m);
  const memory = new Map<string, number>();
  for (const p of Array.isArray(profiles) ? profiles : []) if (p && typeof p.id === 'string') memory.set(p.id, p.memoryGb);
  const usedGb = new Map<string, number>();
  const ownerOf = new Map<string, string>(); // `${modelId}\0${nodeId}` → pipeline id
  const pipelineIds = new Set<string>();

  for (const pipeline of plan.pipelines) {
    const pipelineId = pipeline?.id;
    if (typeof pipelineId !== 'string' || pipelineId.length === 0 || !Array.isArray(pipeline.stages)) {
      issues.push({ code: 'BadStage', message: 'every pipeline needs a string "id" and a "stages" array' });
      continue;
    }
    if (pipelineIds.has(pipelineId)) issues.push({ code: 'DuplicatePipeline', pipelineId, message: `pipeline "${pipelineId}" is listed twice` });
    pipelineIds.add(pipelineId);
    const model = models.get(pipeline.modelId);
    if (model === undefined) {
      issues.push({ code: 'UnknownModel', pipelineId, modelId: pipeline.modelId, message: `pipeline "${pipelineId}" serves unknown model ${describeValue(pipeline.modelId)}` });
      continue;
    }
    let next = 0;
    const inThisPipeline = new Set<string>();
    for (const [i, stage] of pipeline.stages.entries()) {
      const where = `pipeline "${pipelineId}" stage ${i}`;
      if (stage === null || typeof stage !== 'object' || !Number.isInteger(stage.layerStart) || !Number.isInteger(stage.layerEnd) || stage.layerStart >= stage.layerEnd || stage.layerStart < 0) {
        issues.push({ code: 'BadStage', pipelineId, message: `${where}: needs integer layers with 0 <= layerStart < layerEnd` });
        next = Number.NaN;
        continue;
      }
      const nodeId: unknown = stage.nodeId;
      if (typeof nodeId !== 'string' || nodeId.length === 0) {
        issues.push({ code: 'BadStage', pipelineId, message: `${where}: "nodeId" must be a non-empty string` });
        next = Math.max(next, stage.layerEnd);
        continue;
      } else if (profiles !== undefined && !memory.has(nodeId)) {
        issues.push({ code: 'UnknownNode', pipelineId, nodeId, message: `${where}: unknown node "${nodeId}"` });
      }
      if (stage.layerStart > next) {
        issues.push({ code: 'Gap', pipelineId, nodeId, message: `${where}: layers [${next}, ${stage.layerStart}) are held by no stage` });
      } else if (stage.layerStart < next) {
        issues.push({ code: 'Overlap', pipelineId, nodeId, message: `${where}: layers [${stage.layerStart}, ${next}) are held twice` });
      }
      next = Math.max(next, stage.layerEnd);
      const key = `${model.id}\0${nodeId}`;
      const owner = ownerOf.get(key);
      if (owner !== undefined && (owner !== pipelineId || inThisPipeline.has(nodeId))) {
        issues.push({ code: 'SharedNode', pipelineId, nodeId, modelId: model.id, message: `${where}: node "${nodeId}" already holds layers of model "${model.id}" in pipeline "${owner}" (copies must use disjoint nodes)` });
      }
      ownerOf.set(key, pipelineId);
      inThisPipeline.add(nodeId);
      usedGb.set(nodeId, (usedGb.get(nodeId) ?? 0) + layersGb(model, stage.layerEnd - stage.layerStart));
    }
    if (Number.isFinite(next) && next !== model.layers) {
      issues.push({ code: 'Coverage', pipelineId, modelId: model.id, message: `pipeline "${pipelineId}" covers layers [0, ${next}) but model "${model.id}" has ${model.layers}` });
    }
  }
  for (const [nodeId, used] of usedGb) {
    const mem = memory.get(nodeId);
    if (mem !== undefined && used > mem + 1e-9) {
      issues.push({ code: 'OverCapacity', nodeId, message: `node "${nodeId}" holds ${round(used)} GB of layers but has ${mem} GB` });
    }
  }
  return issues;
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/**
 * Throws a {@link PlanError} `InvalidPlan` listing every shape issue of a hand-written plan (see
 * {@link planShapeIssues}), so that routing never serves a copy with a gap or an overlap.
 */
export function assertPlanShape(plan: SwarmPlan): void {
  const issues = planShapeIssues(plan);
  if (issues.length > 0) {
    throw new PlanError('InvalidPlan', `invalid plan: ${issues.map((i) => i.message).join('; ')}`);
  }
}

/** Throws a {@link PlanError} `InvalidPlan` listing every issue, if any. */
export function assertValidPlan(plan: SwarmPlan, profiles: readonly NodeProfile[]): void {
  const issues = validatePlan(plan, profiles);
  if (issues.length > 0) {
    throw new PlanError('InvalidPlan', `invalid plan: ${issues.map((i) => i.message).join('; ')}`);
  }
}
