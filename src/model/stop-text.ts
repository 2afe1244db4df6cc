/**
 * A completion's text as its tokens decode, cut at the first stop string (OpenAI's `stop`), and
 * handed out in final pieces for streaming: text that could still be the start of a stop string
 * is held back until the next token decides it.
 */

/** The text of a completion, decoded so far, with its stop strings. */
export class StopText {
  /** The text so far, cut before a stop string once one appeared. */
  text = '';
  /** True once a stop string appeared. */
  stopped = false;
  private sent = 0;

  constructor(private readonly stops: readonly string[]) {}

  /**
   * Takes the whole decoded text so far; returns what became final since the last call (nothing
   * that may still turn into a stop string).
   */
  push(decoded: string): string {
    if (this.stopped) return '';
    let cut = -1;
    for (const s of this.stops) {
      if (s === '') continue;
      const at = decoded.indexOf(s);
      if (at >= 0 && (cut < 0 || at < cut)) cut = at;
    }
    if (cut >= 0) {
      this.stopped = true;
      this.text = decoded.slice(0, cut);
      return this.take(this.text.length);
    }
    this.text = decoded;
    return this.take(decoded.length - this.heldBack(decoded));
  }

  /** What is left to hand out once the completion ended. */
  flush(): string {
    return this.take(this.text.length);
  }

  private take(upTo: number): string {
    if (upTo <= this.sent) return '';
    const piece = this.text.slice(this.sent, upTo);
    this.sent = upTo;
    return piece;
  }

  /** Characters at the text's end that begin some stop string (held back); a trailing U+FFFD (half a character) too. */
  private heldBack(text: string): number {
    let held = text.endsWith('\uFFFD') ? 1 : 0;
    for (const s of this.stops) {
      for (let n = Math.min(s.length - 1, text.length); n > held; n--) {
        if (text.endsWith(s.slice(0, n))) {
          held = n;
          break;
        }
      }
    }
    return held;
  }
}
