/**
 * What every step of the HTML report is drawn from: the swarm's plan and telemetry after the
 * step (a frame), the state of a node in it, and the order of the copies, which never changes
 * between steps so that flipping from one step to the next shows what moved.
 */
import type { NodeStates, SwarmPlan } from '../core/types.js';
import { nullRecord, ownValue, setOwn } from '../core/records.js';
import type { SwarmSimReport } from './swarm-sim.js';

/** The swarm as it was right after one step: its plan and its telemetry. */
export interface ReportFrame {
  readonly plan: SwarmPlan;
  readonly nodes: NodeStates;
}

/** A node as one step leaves it: serving, down, suspected by its detector, or not in the swarm. */
export type NodeMark = 'up' | 'down' | 'suspect' | 'absent';

/** The mark of `id` in `frame` (docs/see-it.md: down is a ✕, suspect a ◆). */
export function nodeMark(frame: ReportFrame, id: string): NodeMark {
  const t = ownValue(frame.nodes, id);
  if (t === undefined) return 'absent';
  if (!t.alive) return 'down';
  return t.suspect === true ? 'suspect' : 'up';
}

/** Without frames: the final plan for every step, alive and down replayed from the steps. */
export function framesFromReport(report: SwarmSimReport): ReportFrame[] {
  const down = new Set<string>();
  const gone = new Set<string>();
  const ids = new Set(report.plan.pipelines.flatMap((p) => p.stages.map((s) => s.nodeId)));
  return report.steps.map((step) => {
    if (step.step === 'failover') down.add(step.killed);
    if (step.step === 'revive') down.delete(step.revived);
    if (step.step === 'retire') gone.add(step.retired);
    if (step.step === 'growth') ids.add(step.added.id);
    const nodes = nullRecord<{ alive: boolean; samples: number }>();
    for (const id of [...ids, ...down]) if (!gone.has(id)) setOwn(nodes, id, { alive: !down.has(id), samples: 0 });
    return { plan: report.plan, nodes };
  });
}

/** One copy as the report lists it, wherever it first appears. */
export interface CopyEntry {
  readonly id: string;
  readonly modelId: string;
}

/**
 * Every copy met in any frame, grouped by model in the plan's model order, each model's copies in
 * the order they first appear: the rows of every step, so rows never move between steps.
 */
export function copyOrder(frames: readonly ReportFrame[]): CopyEntry[] {
  const models: string[] = [];
  const byModel = new Map<string, Map<string, CopyEntry>>();
  const model = (id: string): Map<string, CopyEntry> => {
    let copies = byModel.get(id);
    if (copies === undefined) {
      copies = new Map();
      byModel.set(id, copies);
      models.push(id);
    }
    return copies;
  };
  for (const frame of frames) {
    for (const m of frame.plan.models) model(m.id);
    for (const p of frame.plan.pipelines) {
      const copies = model(p.modelId);
      if (!copies.has(p.id)) copies.set(p.id, { id: p.id, modelId: p.modelId });
    }
  }
  return models.flatMap((m) => [...(byModel.get(m)?.values() ?? [])]);
}

/** Every node met in any frame or profile, profiles first, in a stable order. */
export function nodeOrder(frames: readonly ReportFrame[], profiles: readonly { id: string }[]): string[] {
  const order = new Set(profiles.map((p) => p.id));
  for (const frame of frames) {
    for (const id of Object.keys(frame.nodes)) order.add(id);
    for (const p of frame.plan.pipelines) for (const s of p.stages) order.add(s.nodeId);
  }
  return [...order];
}
