/**
 * Safe descriptions of caller values for error messages. `String(value)` and template literals
 * throw a TypeError on a Symbol or an object without a usable `toString` (a null-prototype
 * object, `{ toString: 0 }`): an error message must never be the thing that crashes.
 */

/** A short, never-throwing description of any value: `"abc"`, `12`, `NaN`, `null`, `an object`. */
export function describeValue(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value.length > 80 ? `${value.slice(0, 79)}…` : value);
    case 'number':
    case 'boolean':
    case 'undefined':
      return String(value);
    case 'bigint':
      return `${value.toString()}n`;
    case 'symbol':
      return 'a symbol';
    case 'function':
      return 'a function';
    default:
      return value === null ? 'null' : Array.isArray(value) ? 'an array' : 'an object';
  }
}

/** Whether `value` is a non-null object that is not an array (what a record or options bag must be). */
export function isRecordLike(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
