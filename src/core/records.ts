/**
 * Per-id tables as plain data. Public results stay JSON-serialisable (docs/design.md §1: no Maps in
 * public results), so a table keyed by caller-chosen ids is a null-prototype object, and every
 * read goes through {@link ownValue}: an id named after a built-in property (`__proto__`,
 * `constructor`, `toString`) then behaves exactly like `a`, whether the table was built here or
 * handed in by a caller as an ordinary object (for example one read back with `JSON.parse`).
 * See docs/inputs.md.
 */

/** An empty per-id table with no prototype: no inherited key can be mistaken for an id. */
export function nullRecord<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

/** `record[key]` if `key` is the record's own property, else undefined (never an inherited member). */
export function ownValue<T>(record: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}

/**
 * Sets `record[key]` as an own data property, even for `__proto__` on an ordinary object (where
 * plain assignment would change the prototype instead).
 */
export function setOwn<T>(record: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(record, key, { value, writable: true, enumerable: true, configurable: true });
}
