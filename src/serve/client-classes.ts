/**
 * Client classes of `hecate-node serve --classes FILE` (docs/serve.md, "Classes"): who a caller of
 * `POST /v1/generate` is decides its admission priority, its deadline and how many of its
 * generations may be under way at once. A caller is in the class whose token it presents
 * (`authorization: Bearer`); a caller without one is in the class it names in the `x-hecate-class`
 * header, if that class has no token, else in the default class. A class with a token cannot be
 * claimed by naming it: the priority comes from the credential, not from the request.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { describeValue, isRecordLike } from '../core/describe.js';
import { InputError, parseJsonText, type Loaded } from '../sim/input-error.js';
import { sameSecret } from './auth/request-signing.js';
import { ServeError } from './serve-error.js';

/** The header a caller without a class token names an open class in. */
export const CLASS_HEADER = 'x-hecate-class';

/** One class, as configured. */
export interface ClientClass {
  readonly name: string;
  /** Admission priority: higher served first; below 0 sheddable (docs/admission.md). @defaultValue 0 */
  readonly priority: number;
  /** Generations of the class under way at once (waiting for admission or running); past it 429. @defaultValue unlimited */
  readonly maxInFlight: number;
  /** The class's generations must finish within this (at most the orchestrator's deadline). @defaultValue the orchestrator's */
  readonly deadlineMs: number | undefined;
  /** Its token's text (read from `tokenFile`); undefined: an open class. */
  readonly token: string | undefined;
}

/** The classes of one file, and which one is the default. */
export interface ClientClasses {
  readonly classes: readonly ClientClass[];
  readonly defaultClass: ClientClass;
}

const CLASS_KEYS = new Set(['name', 'priority', 'maxInFlight', 'deadlineMs', 'tokenFile']);
const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Reads a classes file: `{ "default": name, "classes": [{ name, priority?, maxInFlight?, deadlineMs?, tokenFile? }] }`;
 * `tokenFile` is relative to the classes file. Never throws: an {@link InputError} names the file and the JSON path.
 */
export function loadClientClasses(text: string, file: string, readToken: (path: string) => string = (p) => readFileSync(p, 'utf8')): Loaded<ClientClasses> {
  const json = parseJsonText(text, file);
  if (!json.ok) return json;
  const bad = (path: string, detail: string): Loaded<ClientClasses> => ({ ok: false, error: new InputError(file, path, detail) });
  const root = json.value;
  if (!isRecordLike(root)) return bad('$', `must be an object { default, classes }, got ${describeValue(root)}`);
  for (const key of Object.keys(root)) if (key !== 'default' && key !== 'classes') return bad(`$.${key}`, 'unknown key (expected "default" and "classes")');
  const list = root['classes'];
  if (!Array.isArray(list) || list.length === 0 || list.length > 64) return bad('$.classes', `must be an array of 1 to 64 classes, got ${describeValue(list)}`);
  const classes: ClientClass[] = [];
  const tokens = new Map<string, string>();
  for (const [i, entry] of list.entries()) {
    const at = `$.classes[${i}]`;
    if (!isRecordLike(entry)) return bad(at, `must be an object { name, priority?, maxInFlight?, deadlineMs?, tokenFile? }, got ${describeValue(entry)}`);
    for (const key of Object.keys(entry)) if (!CLASS_KEYS.has(key)) return bad(`${at}.${key}`, `unknown key (expected ${[...CLASS_KEYS].join(', ')})`);
    const { name, priority = 0, maxInFlight = Number.POSITIVE_INFINITY, deadlineMs, tokenFile } = entry;
    if (typeof name !== 'string' || !NAME.test(name)) return bad(`${at}.name`, `must be 1-64 letters, digits, "_" or "-", got ${describeValue(name)}`);
    if (classes.some((c) => c.name === name)) return bad(`${at}.name`, `duplicate class "${name}"`);
    if (typeof priority !== 'number' || !Number.isInteger(priority) || Math.abs(priority) > 1_000_000) return bad(`${at}.priority`, `must be an integer from -1000000 to 1000000, got ${describeValue(priority)}`);
    if (maxInFlight !== Number.POSITIVE_INFINITY && !(typeof maxInFlight === 'number' && Number.isInteger(maxInFlight) && maxInFlight >= 1)) return bad(`${at}.maxInFlight`, `must be an integer >= 1, got ${describeValue(maxInFlight)}`);
    if (deadlineMs !== undefined && !(typeof deadlineMs === 'number' && deadlineMs > 0 && deadlineMs <= 3_600_000)) return bad(`${at}.deadlineMs`, `must be a number > 0 and <= 3600000, got ${describeValue(deadlineMs)}`);
    let token: string | undefined;
    if (tokenFile !== undefined) {
      if (typeof tokenFile !== 'string' || tokenFile === '') return bad(`${at}.tokenFile`, `must be a file path, got ${describeValue(tokenFile)}`);
      try {
        token = readToken(resolve(dirname(file), tokenFile)).trim();
      } catch (cause) {
        return bad(`${at}.tokenFile`, `cannot read ${tokenFile}: ${(cause as Error).message}`);
      }
      if (token.length < 16) return bad(`${at}.tokenFile`, `${tokenFile} must hold a token of at least 16 characters`);
      const other = tokens.get(token);
      if (other !== undefined) return bad(`${at}.tokenFile`, `the same token as class "${other}": a token names one class`);
      tokens.set(token, name);
    }
    classes.push({ name, priority, maxInFlight: maxInFlight as number, deadlineMs: deadlineMs as number | undefined, token });
  }
  const named = root['default'];
  const defaultClass = named === undefined ? classes[0] : classes.find((c) => c.name === named);
  if (defaultClass === undefined) return bad('$.default', `must name one of the classes (${classes.map((c) => c.name).join(', ')}), got ${describeValue(named)}`);
  return { ok: true, value: { classes, defaultClass } };
}

/** The tokens of the classes that have one: each is also a client token of `/v1/generate`. */
export function classTokens(classes: ClientClasses): string[] {
  return classes.classes.flatMap((c) => (c.token !== undefined ? [c.token] : []));
}

/** The class of a request: by its bearer token, else by the open class its header names, else the default. */
export function classOf(classes: ClientClasses, headers: Readonly<Record<string, string | string[] | undefined>>): ClientClass {
  const bearer = /^Bearer (\S+)$/i.exec(typeof headers['authorization'] === 'string' ? headers['authorization'] : '')?.[1];
  if (bearer !== undefined) for (const c of classes.classes) if (c.token !== undefined && sameSecret(bearer, c.token)) return c;
  const named = headers[CLASS_HEADER];
  if (typeof named === 'string') {
    const c = classes.classes.find((x) => x.name === named);
    if (c === undefined) throw new ServeError('InvalidRequest', 400, `header ${CLASS_HEADER}: no class "${named.slice(0, 64)}" (${classes.classes.map((x) => x.name).join(', ')})`, { field: CLASS_HEADER });
    if (c.token === undefined) return c;
    throw new ServeError('Unauthenticated', 401, `header ${CLASS_HEADER}: class "${c.name}" is taken with its token (authorization: Bearer), not by name`, { field: CLASS_HEADER });
  }
  return classes.defaultClass;
}

/** Generations under way per class, against each class's `maxInFlight`. */
export class ClassLimits {
  private readonly inFlight = new Map<string, number>();

  /**
   * One more generation of `c`.
   * @throws {ServeError} 429 `RateLimited` (field `x-hecate-class`) with `retryAfterMs` when the class is at its `maxInFlight`
   */
  enter(c: ClientClass, retryAfterMs: number): void {
    const n = this.inFlight.get(c.name) ?? 0;
    if (n >= c.maxInFlight) throw new ServeError('RateLimited', 429, `class "${c.name}" has ${n} generations under way, its maxInFlight (--classes)`, { field: CLASS_HEADER, retryAfterMs });
    this.inFlight.set(c.name, n + 1);
  }

  /** One generation of `c` ended. */
  leave(c: ClientClass): void {
    const n = (this.inFlight.get(c.name) ?? 1) - 1;
    if (n <= 0) this.inFlight.delete(c.name);
    else this.inFlight.set(c.name, n);
  }

  /** Generations under way per class (for `/metrics`). */
  counts(): ReadonlyMap<string, number> {
    return this.inFlight;
  }
}
