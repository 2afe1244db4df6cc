/**
 * A strict JSON parser for input files: the JSON of RFC 8259 and nothing more, with the errors a
 * person can act on. Unlike `JSON.parse`, a key given twice in one object is an error naming the
 * key (JSON.parse keeps the last and silently drops data), a byte-order mark is named, and an
 * unexpected character is shown escaped (`U+0000`), never as the raw byte. Objects are built like
 * `JSON.parse` builds them: a `__proto__` key is an ordinary own property.
 */

/** Deeper nesting than this is refused (no topology or scenario needs it; it bounds the recursion). */
export const MAX_JSON_DEPTH = 256;

/** Where a parse failed: `path` is the JSON path of the culprit (`$` for the document), `detail` what is wrong. */
export interface StrictJsonError {
  readonly path: readonly (string | number)[];
  readonly detail: string;
}

/** The parsed value, or why the text is not acceptable JSON. */
export type StrictJsonResult = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: StrictJsonError };

class Failure extends Error {
  constructor(
    readonly at: number,
    readonly what: string,
    readonly path: readonly (string | number)[] = [],
    readonly duplicate = false,
  ) {
    super(what);
  }
}

/** `$.models[0]` for a path (the same notation as the CLI's errors). */
function pathText(path: readonly (string | number)[]): string {
  return path.map((s) => (typeof s === 'number' ? `[${s}]` : /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(s) ? `.${s}` : `[${JSON.stringify(s)}]`)).reduce((a, b) => a + b, '$');
}

/** `U+0041 "A"` for printable characters, `U+0000` for the others: never the raw character. */
export function describeChar(ch: string): string {
  const code = ch.codePointAt(0) ?? 0;
  const hex = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  return code >= 0x21 && code <= 0x7e ? `"${ch}"` : hex;
}

/**
 * Parses `text` as strict JSON. Never throws.
 * @example parseStrictJson('{"a":1,"a":2}') // { ok: false, error: { path: ['a'], detail: 'duplicate key "a" ...' } }
 */
export function parseStrictJson(text: string): StrictJsonResult {
  if (text.charCodeAt(0) === 0xfeff) {
    return { ok: false, error: { path: [], detail: 'the file starts with a byte-order mark (BOM, U+FEFF); save it as UTF-8 without a BOM' } };
  }
  const p = new Parser(text);
  try {
    p.skipSpace();
    const value = p.value([], 0);
    p.skipSpace();
    if (p.pos < text.length) throw new Failure(p.pos, `unexpected ${describeChar(p.charAt(p.pos))} after the end of the JSON value`);
    return { ok: true, value };
  } catch (error) {
    if (!(error instanceof Failure)) throw error;
    const where = lineColumn(text, error.at);
    // A duplicate key is named by its path; a syntax error by its position (and where it was).
    if (error.duplicate) return { ok: false, error: { path: error.path, detail: `invalid JSON at ${where}: ${error.what}` } };
    const inside = error.path.length > 0 ? ` (inside ${pathText(error.path)})` : '';
    return { ok: false, error: { path: [], detail: `invalid JSON at ${where}: ${error.what}${inside}` } };
  }
}

/** `line L column C` of an offset (both from 1). */
export function lineColumn(text: string, offset: number): string {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    start = i + 1;
  }
  return `line ${line} column ${offset - start + 1}`;
}

const ESCAPES: Readonly<Record<string, string>> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

class Parser {
  pos = 0;
  constructor(private readonly text: string) {}

  charAt(i: number): string {
    return String.fromCodePoint(this.text.codePointAt(i) ?? 0);
  }

  skipSpace(): void {
    const t = this.text;
    while (this.pos < t.length) {
      const c = t.charCodeAt(this.pos);
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
      this.pos++;
    }
  }

  private unexpected(path: readonly (string | number)[]): Failure {
    if (this.pos >= this.text.length) return new Failure(this.pos, 'unexpected end of the file', path);
    return new Failure(this.pos, `unexpected ${describeChar(this.charAt(this.pos))}`, path);
  }

  value(path: (string | number)[], depth: number): unknown {
    if (depth > MAX_JSON_DEPTH) throw new Failure(this.pos, `nested deeper than ${MAX_JSON_DEPTH} levels`, path);
    const c = this.text[this.pos];
    if (c === '{') return this.object(path, depth);
    if (c === '[') return this.array(path, depth);
    if (c === '"') return this.string(path);
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return this.number(path);
    for (const [word, value] of [['true', true], ['false', false], ['null', null]] as const) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length;
        return value;
      }
    }
    throw this.unexpected(path);
  }

  private object(path: (string | number)[], depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const firstAt = new Map<string, number>();
    this.pos++;
    this.skipSpace();
    if (this.text[this.pos] === '}') {
      this.pos++;
      return out;
    }
    for (;;) {
      if (this.text[this.pos] !== '"') throw this.unexpectedWith(path, 'a key in double quotes');
      const keyAt = this.pos;
      const key = this.string(path);
      const first = firstAt.get(key);
      if (first !== undefined) {
        throw new Failure(keyAt, `duplicate key ${JSON.stringify(key)} (first at ${lineColumn(this.text, first)}); each key may appear once`, [...path, key], true);
      }
      firstAt.set(key, keyAt);
      this.skipSpace();
      if (this.text[this.pos] !== ':') throw this.unexpectedWith(path, '":" after the key');
      this.pos++;
      this.skipSpace();
      const value = this.value([...path, key], depth + 1);
      // Like JSON.parse: an own data property, even for "__proto__".
      Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
      this.skipSpace();
      const next = this.text[this.pos];
      if (next === ',') {
        this.pos++;
        this.skipSpace();
        continue;
      }
      if (next === '}') {
        this.pos++;
        return out;
      }
      throw this.unexpectedWith(path, '"," or "}"');
    }
  }

  private array(path: (string | number)[], depth: number): unknown[] {
    const out: unknown[] = [];
    this.pos++;
    this.skipSpace();
    if (this.text[this.pos] === ']') {
      this.pos++;
      return out;
    }
    for (;;) {
      out.push(this.value([...path, out.length], depth + 1));
      this.skipSpace();
      const next = this.text[this.pos];
      if (next === ',') {
        this.pos++;
        this.skipSpace();
        continue;
      }
      if (next === ']') {
        this.pos++;
        return out;
      }
      throw this.unexpectedWith(path, '"," or "]"');
    }
  }

  private unexpectedWith(path: readonly (string | number)[], expected: string): Failure {
    const base = this.unexpected(path);
    return new Failure(base.at, `${base.what}, expected ${expected}`, path);
  }

  private string(path: readonly (string | number)[]): string {
    const t = this.text;
    let out = '';
    let from = ++this.pos;
    for (;;) {
      if (this.pos >= t.length) throw new Failure(this.pos, 'unexpected end of the file inside a string', path);
      const c = t.charCodeAt(this.pos);
      if (c === 0x22) {
        out += t.slice(from, this.pos);
        this.pos++;
        return out;
      }
      if (c < 0x20) throw new Failure(this.pos, `control character ${describeChar(t[this.pos] as string)} inside a string (write it as an escape such as \\n)`, path);
      if (c === 0x5c) {
        out += t.slice(from, this.pos);
        const e = t[this.pos + 1];
        if (e === 'u') {
          const hex = t.slice(this.pos + 2, this.pos + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw new Failure(this.pos, 'bad \\u escape: expected four hex digits', path);
          out += String.fromCharCode(parseInt(hex, 16));
          this.pos += 6;
        } else {
          const plain = e === undefined ? undefined : ESCAPES[e];
          if (plain === undefined || e === undefined || !Object.hasOwn(ESCAPES, e)) {
            throw new Failure(this.pos, `bad escape ${e === undefined ? 'at the end of the file' : `\\${describeChar(e)}`}`, path);
          }
          out += plain;
          this.pos += 2;
        }
        from = this.pos;
        continue;
      }
      this.pos++;
    }
  }

  private number(path: readonly (string | number)[]): number {
    const m = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
    m.lastIndex = this.pos;
    const match = m.exec(this.text);
    if (match === null) throw this.unexpected(path);
    const after = this.text[this.pos + match[0].length];
    if (after !== undefined && /[0-9.eE+-]/.test(after)) {
      this.pos += match[0].length;
      throw this.unexpectedWith(path, 'a JSON number');
    }
    this.pos += match[0].length;
    return Number(match[0]);
  }
}
