/**
 * The one error every input problem becomes: it names the file and the JSON path, on one line,
 * so the CLI can print it as is and tests can match it.
 */

import { describeValue } from '../core/describe.js';
import { parseStrictJson } from './strict-json.js';

/** A JSON path segment as zod reports it. */
export type PathSegment = string | number | symbol;

/** A string as is; any other value described (an argument of the wrong type must not crash the error). */
function textOf(value: unknown): string {
  return typeof value === 'string' ? value : describeValue(value);
}

/** A file that could not be used; `message` is `<file>: <path>: <what is wrong>`. */
export class InputError extends Error {
  override readonly name = 'InputError';
  /** The file (or flag, or function argument) the problem is in. */
  readonly file: string;
  /** JSON path of the culprit, `$` for the whole document, empty when there is none (unreadable file, bad JSON). */
  readonly path: string;
  /** What is wrong, without the file and path. */
  readonly detail: string;
  constructor(file: string, path: string, detail: string, options?: ErrorOptions) {
    const f = printable(oneLine(textOf(file)));
    const p = printable(oneLine(textOf(path)));
    const d = printable(oneLine(textOf(detail)));
    super(p ? `${f}: ${p}: ${d}` : `${f}: ${d}`, options);
    this.file = f;
    this.path = p;
    this.detail = d;
  }
}

/** Either a value or the reason it could not be had: loaders return this, never throw. */
export type Loaded<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: InputError };

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * Formats a path as JSON path: `$`, `$.nodes[2].id`, `$["odd key"]`.
 * @param base the path of the document inside a larger one, `$` by default.
 * @throws {InputError} when `segments` is not an array or `base` not a string.
 */
export function jsonPath(segments: readonly PathSegment[], base = '$'): string {
  if (!Array.isArray(segments)) throw new InputError('jsonPath', '', `the segments must be an array, got ${describeValue(segments)}`);
  if (typeof base !== 'string') throw new InputError('jsonPath', '', `the base must be a string, got ${describeValue(base)}`);
  let out = base;
  for (const s of segments as readonly unknown[]) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (typeof s === 'string' && IDENTIFIER.test(s)) out += `.${s}`;
    else out += `[${JSON.stringify(typeof s === 'string' ? s : typeof s === 'symbol' ? (s.description ?? '') : describeValue(s))}]`;
  }
  return out;
}

/** Collapses whitespace so a message stays on one line, and keeps it short. */
export function oneLine(text: string, max = 400): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

// C0 and C1 controls, DEL, zero-width and bidirectional controls, line/paragraph separators, BOM.
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]/gu;

/**
 * Escapes every character a terminal would not show as itself (NUL and other controls, zero-width
 * and bidirectional marks, a BOM) as `\u0000`: a message never echoes raw bytes of a file.
 */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (ch) => `\\u${(ch.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`);
}

/**
 * Parses JSON text strictly (see `parseStrictJson`): a syntax error, a key given twice or a
 * byte-order mark becomes an {@link InputError} naming the file, the JSON path and the line and
 * column. Never throws.
 */
export function parseJsonText(text: string, file: string): Loaded<unknown> {
  if (typeof text !== 'string') return { ok: false, error: new InputError(file, '', `the text to parse must be a string, got ${describeValue(text)}`) };
  const parsed = parseStrictJson(text);
  if (parsed.ok) return parsed;
  return { ok: false, error: new InputError(file, parsed.error.path.length > 0 ? jsonPath(parsed.error.path) : '', parsed.error.detail) };
}
