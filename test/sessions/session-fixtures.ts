import type { NodeProfile, PrefixPlugin, SwarmConfig } from '../../src/index.js';
import { createSessionSwarm, NodeBusyError, StateLostError, type SessionSwarm, type SessionStage, type StageContext } from '../../src/sessions/index.js';
import { DigestNodes, DigestReference, mix } from '../../src/core/digest-model.js';
import { VirtualTimers } from '../../src/sim/load/virtual-timers.js';

/** Two copies of a 12-layer model on eight nodes (5 layers each at most) whose stage boundaries differ between the copies. */
export const profiles: NodeProfile[] = [
  { id: 'a1', memoryGb: 5, score: 6, latencyMs: 4 },
  { id: 'a2', memoryGb: 5, score: 3, latencyMs: 6 },
  { id: 'a3', memoryGb: 5, score: 2, latencyMs: 8 },
  { id: 'a4', memoryGb: 5, score: 1, latencyMs: 9 },
  { id: 'b1', memoryGb: 5, score: 2, latencyMs: 5 },
  { id: 'b2', memoryGb: 5, score: 2, latencyMs: 6 },
  { id: 'b3', memoryGb: 5, score: 3, latencyMs: 7 },
  { id: 'b4', memoryGb: 5, score: 5, latencyMs: 8 },
];
export const LAYERS = 12;
export const config: SwarmConfig = { models: [{ id: 'base', layers: LAYERS, pipelines: 2 }], releaseSampleMs: 0 };

/** A stage call as the fake nodes saw it. */
export interface Call {
  readonly stage: SessionStage;
  readonly input: number;
  readonly replay: readonly number[];
  readonly fresh: boolean;
  readonly step: number;
}

/** What a fake node does with the next call: answer after `ms`, reject, say it is at capacity or lost the session's state, or never answer. */
export type Behaviour = { readonly kind: 'ok'; readonly ms?: number } | { readonly kind: 'reject' } | { readonly kind: 'busy' } | { readonly kind: 'lost' } | { readonly kind: 'hang' };

/** A swarm on virtual timers, and fake stateful nodes (the digest model) behind a stage runner. */
export function harness(options: { swarmConfig?: SwarmConfig; prefixCache?: PrefixPlugin } = {}) {
  const timers = new VirtualTimers();
  const swarm: SessionSwarm = createSessionSwarm(profiles, options.swarmConfig ?? config, { clock: timers, seed: 7, ...(options.prefixCache !== undefined ? { prefixCache: options.prefixCache } : {}) });
  const nodes = new DigestNodes();
  const calls: Call[] = [];
  /** Per node: what its calls do; default answers at once. */
  const behaviour = new Map<string, (call: Call) => Behaviour>();
  /** Killed nodes: their calls never answer, the ones running included. */
  const killed = new Set<string>();
  const runStage = (stage: SessionStage, input: number, ctx: StageContext<number>): Promise<number> => {
    const call: Call = { stage, input, replay: [...ctx.replay], fresh: ctx.fresh, step: ctx.step };
    calls.push(call);
    const b = behaviour.get(stage.nodeId)?.(call) ?? { kind: 'ok' };
    if (b.kind === 'reject') return Promise.reject(new Error(`node ${stage.nodeId} refused`));
    if (b.kind === 'busy') return Promise.reject(new NodeBusyError(stage.nodeId, `node ${stage.nodeId} is at capacity`));
    if (b.kind === 'lost') return Promise.reject(new StateLostError(stage.nodeId, `node ${stage.nodeId} does not hold session ${stage.sessionId}`));
    if (b.kind === 'hang' || killed.has(stage.nodeId)) return new Promise<number>(() => {});
    return new Promise<number>((resolve, reject) => {
      timers.setTimeout(() => {
        if (killed.has(stage.nodeId)) return; // died while running: a black hole
        if (ctx.signal.aborted) return reject(ctx.signal.reason);
        try {
          const { output, replayOutputs } = nodes.run(stage.nodeId, stage.sessionId, stage.layerStart, stage.layerEnd, input, ctx.replay, ctx.fresh);
          if (ctx.replay.length > 0) ctx.replayed(replayOutputs);
          resolve(output);
        } catch (error) {
          reject(error);
        }
      }, b.ms ?? 1);
    });
  };
  /** Runs a promise to completion in virtual time. */
  async function drive<T>(promise: Promise<T>): Promise<T> {
    let settled = false;
    const watched = promise.finally(() => {
      settled = true;
    });
    watched.catch(() => {});
    for (let rounds = 0; !settled; rounds++) {
      await timers.run(timers.now() + 1_000_000);
      if (!settled && timers.pending === 0 && rounds > 2) throw new Error('the promise never settles and no timer is left');
    }
    return watched;
  }
  /** Kills a node: its calls never answer and its state is lost; the swarm learns after `detectMs`. */
  function kill(nodeId: string, detectMs = 0): void {
    killed.add(nodeId);
    nodes.lose(nodeId);
    if (detectMs === 0) swarm.markDown(nodeId);
    else timers.setTimeout(() => killed.has(nodeId) && swarm.markDown(nodeId), detectMs);
  }
  /** Brings a killed node back, empty. */
  function revive(nodeId: string): void {
    killed.delete(nodeId);
    swarm.markAlive(nodeId);
  }
  return { timers, swarm, nodes, calls, behaviour, runStage, drive, kill, revive, killed };
}

/** The reference outputs of `steps` steps, each input derived from the previous output. */
export function referenceRun(first: number, steps: number): { inputs: number[]; outputs: number[] } {
  const ref = new DigestReference(LAYERS);
  const inputs: number[] = [];
  const outputs: number[] = [];
  let x = first;
  for (let t = 0; t < steps; t++) {
    inputs.push(x);
    const y = ref.step(x);
    outputs.push(y);
    x = mix(y, t + 1);
  }
  return { inputs, outputs };
}

/** The next step's input after `output` (the same rule as {@link referenceRun}). */
export const nextInput = (output: number, t: number) => mix(output, t + 1);
