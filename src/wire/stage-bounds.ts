/**
 * The bounds of one stage call, on both sides of it (docs/serve.md, "Limits"; docs/security.md):
 * what an agent accepts before it spends time or memory on a call, and the longest a timer may
 * wait. Every bound is tied to another limit, so an honest request never meets one.
 */
import { PLAN_LIMITS } from '../core/validate.js';
import { ServeError } from './serve-error.js';

/** The longest delay a host timer takes: past it, `setTimeout` fires after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Limits of a stage call. `tokens`: a prompt of 65,536 characters at four a token; `replay`: the
 * steps of a generation (a replay is at most the session's earlier steps); `layers`: a model's
 * (the planner's limit); `work`: digest layer-runs of one call, layers × (1 + replay), what the
 * stand-in computes synchronously; `cachedLayers`: layer caches an agent keeps over all sessions.
 */
export const STAGE_LIMITS = Object.freeze({ tokens: 16_384, replay: 4096, layers: PLAN_LIMITS.layers, work: 2_000_000, cachedLayers: 262_144 });

/** The default longest a stage call may be computed to take on an agent: the orchestrator's default deadline. */
export const DEFAULT_MAX_STAGE_MS = 60_000;

/** The fields of a stage call its bounds read. */
export interface BoundedStageCall {
  readonly modelId: string;
  readonly layerStart: number;
  readonly layerEnd: number;
  readonly tokens: number;
  readonly replay: { readonly length: number };
}

/**
 * Refuses a stage call the agent must not run: layers outside the model (once the orchestrator
 * told the agent its models), more layer-runs than {@link STAGE_LIMITS}.work, or more layers than
 * it may cache. Each refusal names the field. (A bound on the call's computed time is the
 * engine's: `StageEngine.check`.)
 * @param models layers per model id, as the join's answer gave them; undefined before a join
 */
export function checkStageRequest(body: BoundedStageCall, models: ReadonlyMap<string, number> | undefined): void {
  if (body.layerEnd <= body.layerStart) throw new ServeError('InvalidRequest', 400, `layerEnd (${body.layerEnd}) must be greater than layerStart (${body.layerStart})`, { field: 'layerEnd' });
  if (models !== undefined) {
    const layers = models.get(body.modelId);
    if (layers === undefined) throw new ServeError('InvalidRequest', 400, `modelId: the swarm has no model "${body.modelId}" (it has ${[...models.keys()].map((m) => `"${m}"`).join(', ')})`, { field: 'modelId' });
    if (body.layerEnd > layers) throw new ServeError('InvalidRequest', 400, `layerEnd: ${body.layerEnd} is past model "${body.modelId}"'s ${layers} layers`, { field: 'layerEnd' });
  }
  const layers = body.layerEnd - body.layerStart;
  if (layers > STAGE_LIMITS.cachedLayers) throw new ServeError('InvalidRequest', 400, `layerEnd: ${layers} layers in one call is more than an agent caches (${STAGE_LIMITS.cachedLayers})`, { field: 'layerEnd' });
  const work = layers * (1 + body.replay.length);
  if (work > STAGE_LIMITS.work) throw new ServeError('InvalidRequest', 400, `replay: ${layers} layers × (1 + ${body.replay.length} replayed inputs) = ${work} layer-runs, over the bound of one call (${STAGE_LIMITS.work})`, { field: 'replay' });
}

/** A delay a host timer can take: at least 0, below {@link MAX_TIMER_MS}. */
export function timerDelay(ms: number): number {
  return Number.isFinite(ms) ? Math.min(Math.max(0, ms), MAX_TIMER_MS - 1) : MAX_TIMER_MS - 1;
}
