/**
 * How long each watched node has held reserved requests without completing one: a node that
 * swallows requests (a black hole) answers nothing, so its leases pile up while nothing comes
 * back. A node is stalled once that wait passes `factor` times the latency its requests were
 * expected to take (docs/detection.md).
 */
export class StallWatch {
  /** Per node with open watched leases: since when nothing came back, and the longest expected latency of those leases. */
  private readonly waits = new Map<string, { since: number; expectMs: number }>();

  constructor(private readonly factor: number) {}

  /** Whether any node is being waited on. */
  get size(): number {
    return this.waits.size;
  }

  /** A lease expected to take `expectMs` opened on `nodes` at `now`. */
  opened(nodes: readonly string[], now: number, expectMs: number): void {
    for (const n of nodes) {
      const wait = this.waits.get(n);
      if (wait === undefined) this.waits.set(n, { since: now, expectMs });
      else if (expectMs > wait.expectMs) wait.expectMs = expectMs;
    }
  }

  /** A request through `nodeId` completed at `now`: the wait starts over. */
  progressed(nodeId: string, now: number): void {
    const wait = this.waits.get(nodeId);
    if (wait !== undefined) wait.since = now;
  }

  /** No lease holds `nodeId` any more (or it left): nothing to wait for. */
  idle(nodeId: string): void {
    this.waits.delete(nodeId);
  }

  /** Whether `nodeId` has waited past `factor` times its requests' expected latency by `now`. */
  stalled(nodeId: string, now: number): boolean {
    const wait = this.waits.get(nodeId);
    return wait !== undefined && now - wait.since > this.factor * wait.expectMs;
  }
}
