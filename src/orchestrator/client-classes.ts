/**
 * Client classes of `hecate-node serve --classes FILE` (docs/serve.md, "Classes"): who a caller of
 * `POST /v1/generate` is decides its admission priority, its deadline and how many of its
 * generations may be under way at once. A caller is in the class whose token it presents
 * (`authorization: Bearer`); a caller without one is in the class it names in the `x-hecate-class`
 * header, if that class has no token, else in the default class. A class with a token cannot be
 * claimed by naming it: the priority comes from the credential, not from the request. The file is
 * read by the CLI (src/cli/client-classes-file.ts).
 */
import { sameSecret } from '../wire/request-signing.js';
import { ServeError } from '../wire/serve-error.js';

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
