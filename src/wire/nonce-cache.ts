/**
 * The nonces of requests already accepted, each kept while its timestamp is within the allowed
 * skew: a request replayed inside that window is refused for its nonce, outside it for its time.
 */

/** Nonces seen, by nonce, with the time each may be forgotten; bounded. */
export class NonceCache {
  private readonly seen = new Map<string, number>();

  /**
   * @param keepMs how long a nonce is remembered (twice the allowed skew covers every timestamp still accepted)
   * @param max most nonces held; past it, new requests are refused until old ones expire
   */
  constructor(
    private readonly keepMs: number,
    private readonly max = 200_000,
  ) {}

  /** Nonces held now. */
  get size(): number {
    return this.seen.size;
  }

  /** True when `nonce` was admitted and is still remembered at `now` (nothing recorded). */
  has(nonce: string, now: number): boolean {
    const until = this.seen.get(nonce);
    return until !== undefined && until > now;
  }

  /**
   * Records `nonce` at `now` if it is new.
   * @returns `fresh`, `replayed` (seen within the window) or `full` (too many requests in the window)
   */
  admit(nonce: string, now: number): 'fresh' | 'replayed' | 'full' {
    this.prune(now);
    if (this.seen.has(nonce)) return 'replayed';
    if (this.seen.size >= this.max) return 'full';
    this.seen.set(nonce, now + this.keepMs);
    return 'fresh';
  }

  /** Drops expired nonces: they were inserted in time order, so from the oldest until one is still live. */
  private prune(now: number): void {
    for (const [nonce, until] of this.seen) {
      if (until > now) return;
      this.seen.delete(nonce);
    }
  }
}
