/**
 * The text a client is sent, from the pieces the engines stream (docs/openai.md, "Failover"): the
 * orchestrator applies the stop strings itself over the whole answer, so a stop string split
 * across two engines' pieces (a join after a failure) still ends it, and holds back what could be
 * the start of one, and a lone UTF-16 high surrogate, until the next piece says. Pure.
 */

/** The answer's text so far: what was generated, what was released to the client, and whether a stop string ended it. */
export class StreamText {
  private held = '';
  private all = '';
  private out = '';
  private ended = false;
  private pieces = 0;

  constructor(private readonly stops: readonly string[]) {}

  /** Everything the engines generated, released or held (what a continuation starts from). */
  generated(): string {
    return this.all;
  }

  /** Everything released to the client. */
  released(): string {
    return this.out;
  }

  /** Pieces (tokens, as engines stream one a chunk) received. */
  count(): number {
    return this.pieces;
  }

  /** True once a stop string was found: nothing more is released. */
  stopped(): boolean {
    return this.ended;
  }

  /** One more piece from an engine; returns the text it lets go to the client ('' for none). */
  push(piece: string): string {
    if (this.ended || piece === '') return '';
    this.pieces++;
    this.all += piece;
    this.held += piece;
    let at = -1;
    for (const s of this.stops) {
      const i = this.held.indexOf(s);
      if (i >= 0 && (at < 0 || i < at)) at = i;
    }
    if (at >= 0) {
      this.ended = true;
      return this.release(this.held.length - at, true);
    }
    let keep = 0;
    for (const s of this.stops) {
      for (let k = Math.min(s.length - 1, this.held.length); k > keep; k--) {
        if (this.held.endsWith(s.slice(0, k))) {
          keep = k;
          break;
        }
      }
    }
    const last = this.held.charCodeAt(this.held.length - 1 - keep);
    if (last >= 0xd800 && last <= 0xdbff) keep++; // half a character: its other half is in the next piece
    return this.release(keep, false);
  }

  /** The engines are done: the held text goes (it can no longer start a stop string). */
  flush(): string {
    if (this.ended) return '';
    return this.release(0, false);
  }

  private release(keep: number, drop: boolean): string {
    const go = this.held.slice(0, this.held.length - keep);
    this.held = drop ? '' : this.held.slice(this.held.length - keep);
    this.out += go;
    return go;
  }
}
