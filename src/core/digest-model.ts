/**
 * A stand-in for a stateful model, exact to the bit: each layer's output is a hash of its input,
 * its index and a digest of every input the layer saw before in the session (its "cache"), so a
 * skipped layer, a layer run twice, a wrong order or a cache rebuilt from a wrong or partial
 * replay all change every later output. Used by W6 and the session tests to check outputs end to end.
 */

/** Mixes two 32-bit values (a murmur3-style finaliser over their combination). */
export function mix(a: number, b: number): number {
  let h = (Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) + Math.imul(b, 0xc2b2ae35)) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The cache digest of a layer that has seen nothing yet. */
const emptyCache = (layer: number) => mix(0x51ed270b, layer);

/** The per-layer caches of one holder for one session. */
export type LayerCaches = Map<number, number>;

/** Runs `layers` [start, end) over `input` with `caches`, updating them; returns the output. */
export function runLayers(input: number, start: number, end: number, caches: LayerCaches): number {
  let h = input >>> 0;
  for (let layer = start; layer < end; layer++) {
    const cache = caches.get(layer) ?? emptyCache(layer);
    const out = mix(mix(h, layer + 1), cache);
    caches.set(layer, mix(cache, h));
    h = out;
  }
  return h;
}

/**
 * The nodes' side of the model: per node, per session, per layer, the cache. A call marked
 * `fresh` drops what the node held of the session for its layers and rebuilds it from `replay`
 * (one batch, like a prefill) before running the input.
 */
export class DigestNodes {
  private readonly held = new Map<string, Map<string, LayerCaches>>();

  /**
   * Runs one stage call; returns its output and the outputs of the replayed inputs.
   * @throws Error when the call is not fresh and the node holds nothing of the session.
   */
  run(nodeId: string, sessionId: string, start: number, end: number, input: number, replay: readonly number[], fresh: boolean): { output: number; replayOutputs: number[] } {
    let sessions = this.held.get(nodeId);
    if (sessions === undefined) this.held.set(nodeId, (sessions = new Map()));
    let caches = sessions.get(sessionId);
    // A node asked to continue a session it holds nothing of (it restarted) refuses, as a server would.
    if (caches === undefined && !fresh) throw new Error(`node "${nodeId}" holds no state of session "${sessionId}" (restarted?)`);
    if (caches === undefined) sessions.set(sessionId, (caches = new Map()));
    if (fresh) for (let layer = start; layer < end; layer++) caches.delete(layer);
    const replayOutputs = replay.map((x) => runLayers(x, start, end, caches));
    return { output: runLayers(input, start, end, caches), replayOutputs };
  }

  /** A node died: everything it held is gone. */
  lose(nodeId: string): void {
    this.held.delete(nodeId);
  }

  /** A session ended: its caches are freed everywhere. */
  forget(sessionId: string): void {
    for (const sessions of this.held.values()) sessions.delete(sessionId);
  }
}

/** The whole model on one holder that never fails: the reference outputs of a session. */
export class DigestReference {
  private readonly caches: LayerCaches = new Map();
  constructor(private readonly layers: number) {}
  /** The model's output for the next step's input. */
  step(input: number): number {
    return runLayers(input, 0, this.layers, this.caches);
  }
}
