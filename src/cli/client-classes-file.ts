/**
 * The file of `hecate-node serve --classes FILE` (docs/serve.md, "Classes"), read into the
 * {@link ClientClasses} serve admits by. Here, in the CLI, because it reads files and reports
 * through the loaders' {@link InputError} (file and JSON path), which serve does not import.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { describeValue, isRecordLike } from '../core/describe.js';
import type { ClientClass, ClientClasses } from '../orchestrator/client-classes.js';
import { InputError, parseJsonText, type Loaded } from '../sim/input-error.js';

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
