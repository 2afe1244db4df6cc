/**
 * The one error every input problem becomes: it names the file and the JSON path, on one line,
 * so the CLI can print it as is and tests can match it.
 */

/** A JSON path segment as zod reports it. */
export type PathSegment = string | number | symbol;

/** A file that could not be used; `message` is `<file>: <path>: <what is wrong>`. */
export class InputError extends Error {
  override readonly name = 'InputError';
  /** The file (or flag) the problem is in. */
  readonly file: string;
  /** JSON path of the culprit, `$` for the whole document, empty when there is none (unreadable file, bad JSON). */
  readonly path: string;
  /** What is wrong, without the file and path. */
  readonly detail: string;
  constructor(file: string, path: string, detail: string, options?: ErrorOptions) {
    super(path ? `${file}: ${path}: ${oneLine(detail)}` : `${file}: ${oneLine(detail)}`, options);
    this.file = file;
    this.path = path;
    this.detail = oneLine(detail);
  }
}

/** Either a value or the reason it could not be had: loaders return this, never throw. */
export type Loaded<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: InputError };

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * Formats a path as JSON path: `$`, `$.nodes[2].id`, `$["odd key"]`.
 * @param base the path of the document inside a larger one, `$` by default.
 */
export function jsonPath(segments: readonly PathSegment[], base = '$'): string {
  let out = base;
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (typeof s === 'string' && IDENTIFIER.test(s)) out += `.${s}`;
    else out += `[${JSON.stringify(String(s))}]`;
  }
  return out;
}

/** Collapses whitespace so a message stays on one line, and keeps it short. */
export function oneLine(text: string, max = 400): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/**
 * Parses JSON text; a syntax error becomes an {@link InputError} naming the file, with the
 * line and column where the parser stopped when Node reports a position.
 */
export function parseJsonText(text: string, file: string): Loaded<unknown> {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    const at = /position (\d+)/.exec(reason);
    const where = at?.[1] !== undefined ? ` at ${lineColumn(text, Number(at[1]))}` : '';
    return { ok: false, error: new InputError(file, '', `invalid JSON${where}: ${reason}`, { cause }) };
  }
}

function lineColumn(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  return `line ${line} column ${column}`;
}
