/**
 * The reference engine's error class: a span it cannot load, a step it cannot run, with a literal
 * code and a message naming the session, span or field (docs/engine-reference.md).
 */

/** What went wrong in the reference engine. */
export type ReferenceEngineErrorCode =
  /** The span's model is not one the engine was given, or the span does not fit its layers. */
  | 'UnknownModel'
  | 'InvalidSpan'
  /** A step on a span not loaded. */
  | 'SpanNotLoaded'
  /** A step's input is of the wrong dtype or shape, or a token id out of the vocabulary. */
  | 'InvalidInput'
  /** A step past 0 of a session whose cache the engine does not hold (evicted, dropped, never seen), or past the next step: rebuild it. */
  | 'SessionNotHeld'
  /** The step would exceed the model's max_position_embeddings. */
  | 'ContextExceeded'
  /** The step does not fit the KV memory bound even with every idle session evicted. */
  | 'KvMemoryExhausted'
  /** The step's signal was aborted; the session's cache is as before the step. */
  | 'Aborted';

/** An error of the reference engine. */
export class ReferenceEngineError extends Error {
  override readonly name = 'ReferenceEngineError';
  readonly code: ReferenceEngineErrorCode;
  constructor(code: ReferenceEngineErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}
