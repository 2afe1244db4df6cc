/**
 * The words of the HTML report: what each step did, the route it left, and the recovery or
 * growth decision spelled out. Plain strings; the caller escapes them.
 */
import type { Recovery, Route } from '../core/types.js';
import type { SimStep, SwarmSimReport } from './swarm-sim.js';

function stages(route: Route): string {
  return route.stages.map((s) => `${s.nodeId} [${s.layerStart}–${s.layerEnd})`).join(' → ');
}

/** The route served after a step, in full: every stage, the cost and the hops; or why there is none. */
export function routeLine(step: SimStep): string {
  if (step.route === null) return `No route: ${step.routeError?.code ?? 'error'} — ${step.routeError?.message ?? ''}`;
  const r = step.route;
  return `Route ${r.modelId} via ${r.pipelineId}${r.degraded ? ' (DEGRADED)' : ''}: ${stages(r)} · cost ${r.cost.toFixed(1)} · ${r.hops} hop${r.hops === 1 ? '' : 's'}`;
}

/** The route in one short line (its stages are drawn beside it). */
export function routeSummary(step: SimStep): string {
  if (step.route === null) return `No route: ${step.routeError?.code ?? 'error'}`;
  const r = step.route;
  return `Route: ${r.modelId} via ${r.pipelineId}${r.degraded ? ' (DEGRADED)' : ''} · ${r.stages.length} stage${r.stages.length === 1 ? '' : 's'} · ${r.hops} hop${r.hops === 1 ? '' : 's'} · cost ${r.cost.toFixed(1)}`;
}

/** What a step did: a headline, and the recovery, growth or relocation decision spelled out. */
export function stepSummary(step: SimStep, report: SwarmSimReport): [string, string | undefined] {
  switch (step.step) {
    case 'start':
      return [`planned ${step.pipelines.length} cop${step.pipelines.length === 1 ? 'y' : 'ies'} of ${countModels(step.pipelines)} model(s)`, undefined];
    case 'failover': {
      const others = step.unrecoverable.filter((m) => m !== report.model);
      const lost = others.length > 0 ? ` · unrecoverable: ${others.join(', ')}` : '';
      return [`${step.killed} dies`, `Recovery: ${failoverText(step, report.model)}${lost}`];
    }
    case 'growth':
      return [`${step.added.id} joins (${step.added.memoryGb} GB)`, `Growth: ${growthText(step)}`];
    case 'revive':
      return [`${step.revived} is back`, undefined];
    case 'retire': {
      const dropped = step.dropped.length > 0 ? ` · dropped ${step.dropped.join(', ')}` : '';
      const moved = step.relocated.map((r) => `${r.pipelineId} ${r.layerStart}–${r.layerEnd} → ${r.to}`).join(', ');
      return [`${step.retired} retires`, `Relocation: ${step.relocated.length} range(s)${moved ? ` (${moved})` : ''}${dropped}`];
    }
    case 'rebalance': {
      const moves = step.moves.map((m) => `${m.id} ${m.kind}: ${m.removes.join('+') || 'idle nodes'} → ${m.adds.map((p) => p.nodes.join('+')).join(', ')}`).join('; ');
      return [`rebalance: ${step.moves.length} move${step.moves.length === 1 ? '' : 's'}, ${step.layersMoved} layers`, `Throughput counted once ${step.before} → ${step.after}${moves ? ` (${moves})` : ''}`];
    }
  }
}

function countModels(pipelineIds: readonly string[]): number {
  return new Set(pipelineIds.map((id) => id.split('/')[0])).size;
}

/** The role a newcomer took, in words. */
export function growthText(step: Extract<SimStep, { step: 'growth' }>): string {
  const on = step.pipelines.length > 0 ? ` (${step.pipelines.join(', ')})` : '';
  switch (step.role) {
    case 'restore':
      return `restores a missing copy${step.modelId ? ` of ${step.modelId}` : ''}${on}`;
    case 'copy':
      return `adds a copy${step.modelId ? ` of ${step.modelId}` : ''}${on}`;
    case 'expert':
      return `hosts expert ${step.modelId ?? ''}${on}`;
    case 'spare':
      return 'waits as a spare for splices and relocation';
  }
}

/** The failover of the reported model, spelled out, including when there was none to be had. */
export function failoverText(step: Extract<SimStep, { step: 'failover' }>, model: string): string {
  if (step.recovery === null && step.unrecoverable.includes(model)) {
    return `none — ${model} is unrecoverable (no intact copy, no splice, nothing left to degrade to)`;
  }
  return recoveryText(step.recovery, step.killed, model);
}

/** The recovery strategy, spelled out. */
export function recoveryText(recovery: Recovery | null, killed: string, model: string): string {
  if (recovery === null) return `the route of ${model} did not use ${killed}: nothing to recover`;
  switch (recovery.strategy) {
    case 'unaffected':
      return `unaffected: the route did not use ${killed}`;
    case 'copy':
      return `intact copy — ${recovery.route.pipelineId} replaces ${recovery.from.pipelineId} whole`;
    case 'splice':
      return `splice — ${recovery.replaced.map((r) => `layers ${r.layerStart}–${r.layerEnd} ${r.from} → ${r.to}`).join(', ')}`;
    case 'degraded': {
      const missing = recovery.missingLayers.map((m) => `${m.layerStart}–${m.layerEnd}`).join(', ');
      return `DEGRADED — survivors of ${recovery.from.pipelineId} serve as ${recovery.route.modelId}; layers ${missing || 'none'} missing`;
    }
  }
}

/**
 * One row per copy of the reported model: its per-token time (compute + hops, docs/cost.md),
 * fastest first, the served copy marked, broken copies said so: why the route was chosen.
 */
export function copyRows(step: SimStep): [string, string][] {
  const copies = [...(step.copies ?? [])].sort((a, b) => Number(b.intact) - Number(a.intact) || a.perTokenMs - b.perTokenMs || (a.pipelineId < b.pipelineId ? -1 : 1));
  return copies.map((c) => {
    const served = step.route !== null && !step.route.degraded && step.route.pipelineId === c.pipelineId ? ' ← route' : '';
    const state = c.intact ? '' : ' · broken (a node is down)';
    const n = `${c.stages} stage${c.stages === 1 ? '' : 's'}`;
    const rate = typeof c.throughput === 'number' ? ` · throughput ${c.throughput.toFixed(3)}` : '';
    return [`per-token ${c.pipelineId}`, `${c.perTokenMs.toFixed(1)} ms = compute ${c.computeMs.toFixed(1)} + hops ${c.hopMs.toFixed(1)} · ${n}${rate}${state}${served}`];
  });
}
