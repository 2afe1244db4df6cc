/**
 * The model directory's error class: a config, weight file or tokenizer that cannot be read or
 * run, with a literal code and a message naming the file and the field (docs/engine-reference.md).
 */

/** What went wrong with a model directory. */
export type ModelErrorCode =
  /** A file is absent, unreadable, or not the JSON / binary layout its name promises. */
  | 'InvalidFile'
  /** A config field is missing or has the wrong type or range. */
  | 'InvalidConfig'
  /** A well-formed config this engine does not implement (another architecture, rope scaling, biases). */
  | 'UnsupportedConfig'
  /** A tensor is absent, of a dtype not handled, or of the wrong shape. */
  | 'InvalidTensor'
  /** Options given to a model writer or reader are out of range. */
  | 'InvalidOptions';

/** An error reading, validating or writing a model directory. */
export class ModelError extends Error {
  override readonly name = 'ModelError';
  readonly code: ModelErrorCode;
  constructor(code: ModelErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}
