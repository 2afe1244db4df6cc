/**
 * The snapshot codec: XState's persisted Swarm snapshot as JSON and back. The Swarm's context is
 * data, but some of it is kept in `Map`s, `Set`s and a byte array because they are fast; JSON has
 * none of these, so each is written as a tagged object (docs/persistence.md, "The snapshot codec"):
 *
 * - `Map` → `{ "$": "Map", "entries": [[key, value], …] }` (insertion order kept)
 * - `Set` → `{ "$": "Set", "values": […] }`
 * - `Uint8Array` → `{ "$": "Uint8Array", "bytes": [0, 1, …] }`
 * - a non-finite number → `{ "$": "Number", "value": "Infinity" | "-Infinity" | "NaN" }`
 * - a plain object that has a `$` key of its own → `{ "$": "Object", "value": {…} }`
 *
 * Anything else that is not plain data (a function, a class instance, an actor) is refused: a
 * context that holds one is not data, and the encoder says where it is. Both directions throw
 * `SwarmError` `InvalidInput` naming the path of what they refused.
 */
import { SwarmError } from '../core/errors.js';

/** A JSON value, as the codec writes it. */
export type Encoded = null | boolean | number | string | readonly Encoded[] | { readonly [key: string]: Encoded };

/** Encodes plain data with Maps, Sets and byte arrays as JSON-safe tagged values. */
export function encodeSnapshot(value: unknown, at = '$'): Encoded {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return value;
  if (value === undefined) return null;
  if (typeof value === 'number') return Number.isFinite(value) ? value : { $: 'Number', value: String(value) };
  if (Array.isArray(value)) return value.map((v, i) => encodeSnapshot(v, `${at}[${i}]`));
  if (value instanceof Map) return { $: 'Map', entries: [...value].map(([k, v], i) => [encodeSnapshot(k, `${at}.key${i}`), encodeSnapshot(v, `${at}.get(${String(k)})`)]) };
  if (value instanceof Set) return { $: 'Set', values: [...value].map((v, i) => encodeSnapshot(v, `${at}.values[${i}]`)) };
  if (value instanceof Uint8Array) return { $: 'Uint8Array', bytes: [...value] };
  if (typeof value === 'object' && (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null)) {
    const out: Record<string, Encoded> = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) define(out, k, encodeSnapshot(v, `${at}.${k}`));
    return Object.prototype.hasOwnProperty.call(value, '$') ? { $: 'Object', value: out } : out;
  }
  throw new SwarmError('InvalidInput', `snapshot value at ${at} is not data (${typeof value === 'function' ? 'a function' : `a ${Object.getPrototypeOf(value)?.constructor?.name ?? typeof value}`})`);
}

/** Decodes what {@link encodeSnapshot} wrote (after `JSON.parse`). */
export function decodeSnapshot(value: unknown, at = '$'): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v, i) => decodeSnapshot(v, `${at}[${i}]`));
  const o = value as Record<string, unknown>;
  switch (o['$']) {
    case undefined:
      return decodeFields(o, at);
    case 'Map':
      return new Map(pairs(o['entries'], at).map(([k, v], i) => [decodeSnapshot(k, `${at}.key${i}`), decodeSnapshot(v, `${at}.entries[${i}]`)]));
    case 'Set':
      return new Set(list(o['values'], `${at}.values`).map((v, i) => decodeSnapshot(v, `${at}.values[${i}]`)));
    case 'Uint8Array': {
      const bytes = list(o['bytes'], `${at}.bytes`);
      if (!bytes.every((b) => Number.isInteger(b) && (b as number) >= 0 && (b as number) < 256)) throw new SwarmError('InvalidInput', `snapshot value at ${at}.bytes must hold bytes (0 to 255)`);
      return Uint8Array.from(bytes as number[]);
    }
    case 'Number': {
      const n = o['value'];
      if (n !== 'Infinity' && n !== '-Infinity' && n !== 'NaN') throw new SwarmError('InvalidInput', `snapshot value at ${at}.value must be "Infinity", "-Infinity" or "NaN"`);
      return Number(n);
    }
    case 'Object':
      if (!isPlain(o['value'])) throw new SwarmError('InvalidInput', `snapshot value at ${at}.value must be an object`);
      return decodeFields(o['value'] as Record<string, unknown>, `${at}.value`);
    default:
      throw new SwarmError('InvalidInput', `snapshot value at ${at} has an unknown tag "$": ${JSON.stringify(o['$'])}`);
  }
}

/** An object's fields decoded, whatever its keys (a `$` key here is a field, not a tag). */
function decodeFields(o: Record<string, unknown>, at: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) define(out, k, decodeSnapshot(v, `${at}.${k}`));
  return out;
}

function isPlain(v: unknown): boolean {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function list(v: unknown, at: string): unknown[] {
  if (!Array.isArray(v)) throw new SwarmError('InvalidInput', `snapshot value at ${at} must be an array`);
  return v;
}

function pairs(v: unknown, at: string): [unknown, unknown][] {
  const l = list(v, `${at}.entries`);
  if (!l.every((p) => Array.isArray(p) && p.length === 2)) throw new SwarmError('InvalidInput', `snapshot value at ${at}.entries must be [key, value] pairs`);
  return l as [unknown, unknown][];
}

/** Sets an own field, whatever its name (`__proto__` is a field here, never the prototype). */
function define(o: object, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}
