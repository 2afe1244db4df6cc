/**
 * A node's standing in verification (docs/security.md, "Verification"): its record of checks that
 * agreed and votes it lost, kept across sessions by whoever verifies (`verifySpans`' `standing`).
 * Standing chooses who checks (the heaviest copies, drawn at random among them) and weighs a vote:
 * two copies outvote one unless the one outweighs them {@link OUTWEIGH} times over, so two fresh
 * liars that agree cannot get an established honest node quarantined.
 */
import { describeValue, isRecordLike } from '../core/describe.js';
import { SessionError } from '../core/errors.js';
import type { SpanHop } from './span-verifier.js';

/** Agreed checks counted towards a node's weight; past it every established node weighs the same. */
export const STANDING_CAP = 32;
/** How many times its accusers' weight a lone outvoted copy must have to win the vote. */
export const OUTWEIGH = 4;

/** One node's record. */
export interface NodeStanding {
  /** Checks it took part in that agreed, and votes it won. */
  readonly agreed: number;
  /** Votes it lost. */
  readonly disagreed: number;
}

/** Options of {@link SpanStanding}. */
export interface SpanStandingOptions {
  /**
   * A node's incarnation (its join count, say): when it changes, the node's record starts again,
   * so a restarted agent earns its standing anew. @defaultValue every node has one incarnation
   */
  readonly incarnation?: (nodeId: string) => unknown;
}

/**
 * The records of every node a verifier has seen: `1 + min(agreed, STANDING_CAP)` is a node's
 * weight, 1 once it lost a vote. A Map per node id; forgets a node on a new incarnation.
 */
export class SpanStanding {
  private readonly records = new Map<string, { agreed: number; disagreed: number; incarnation: unknown }>();

  /** @throws {SessionError} `InvalidInput` for options that are not `{ incarnation?: function }`. */
  constructor(private readonly options: SpanStandingOptions = {}) {
    const o: unknown = options;
    if (!isRecordLike(o) || Object.keys(o).some((k) => k !== 'incarnation') || (o['incarnation'] !== undefined && typeof o['incarnation'] !== 'function')) {
      throw new SessionError('InvalidInput', `SpanStanding options must be { incarnation?: (nodeId) => unknown }, got ${describeValue(o)}`);
    }
  }

  /** `nodeId`'s record (zeros for one never seen, or seen in an earlier incarnation). */
  of(nodeId: string): NodeStanding {
    const r = this.current(nodeId);
    return { agreed: r?.agreed ?? 0, disagreed: r?.disagreed ?? 0 };
  }

  /** Its weight in a vote: `1 + min(agreed, STANDING_CAP)`, or 1 once it lost a vote. */
  weight(nodeId: string): number {
    const r = this.current(nodeId);
    return r === undefined || r.disagreed > 0 ? 1 : 1 + Math.min(r.agreed, STANDING_CAP);
  }

  /** A copy's weight: its lightest hop's (a chain is as credible as its least credible node). */
  copyWeight(copy: readonly SpanHop[]): number {
    return Math.min(...copy.map((h) => this.weight(h.nodeId)));
  }

  /** Counts a check or won vote for each of `nodeIds`. */
  agreed(nodeIds: Iterable<string>): void {
    for (const id of new Set(nodeIds)) this.record(id).agreed++;
  }

  /** Counts a lost vote for `nodeId`. */
  disagreed(nodeId: string): void {
    this.record(nodeId).disagreed++;
  }

  /**
   * One of `copies` drawn with `random` among the heaviest: those the heaviest alone would not
   * outweigh {@link OUTWEIGH} times over (every established node, in a swarm past its first
   * checks; only the established when some are). Undefined for none.
   */
  draw(copies: readonly (readonly SpanHop[])[], random: () => number): readonly SpanHop[] | undefined {
    if (copies.length === 0) return undefined;
    const weights = copies.map((c) => this.copyWeight(c));
    const heaviest = Math.max(...weights);
    const heavy = copies.filter((_c, i) => (weights[i] as number) * OUTWEIGH > heaviest);
    return heavy[Math.min(Math.floor(random() * heavy.length), heavy.length - 1)];
  }

  private current(nodeId: string) {
    const r = this.records.get(nodeId);
    if (r === undefined) return undefined;
    if (this.options.incarnation !== undefined && !Object.is(this.options.incarnation(nodeId), r.incarnation)) {
      this.records.delete(nodeId);
      return undefined;
    }
    return r;
  }

  private record(nodeId: string) {
    let r = this.current(nodeId);
    if (r === undefined) this.records.set(nodeId, (r = { agreed: 0, disagreed: 0, incarnation: this.options.incarnation?.(nodeId) }));
    return r;
  }
}
