/**
 * Command-line flags: parsed with `node:util` parseArgs (strict), values checked with zod, and
 * every problem turned into a one-line {@link UsageError} that names the flag.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { describeValue } from '../core/describe.js';
import { UsageError } from './usage-error.js';

export { UsageError };

/** One flag of a command. */
export interface FlagSpec {
  readonly type: 'string' | 'boolean';
  /** Shown in help: `--kill <id>`. */
  readonly value?: string;
  readonly description: string;
  readonly multiple?: boolean;
  readonly short?: string;
}

/** What a command accepts: its flags and whether it takes positional arguments. */
export interface ArgsSpec {
  readonly flags: Readonly<Record<string, FlagSpec>>;
  /** Name of the positional arguments in help (`<file...>`), or absent for none. */
  readonly positionals?: string;
}

/** Parsed flags: strings, booleans or string lists, by flag name. */
export interface ParsedArgs {
  readonly values: Readonly<Record<string, string | boolean | string[] | undefined>>;
  readonly positionals: readonly string[];
}

/**
 * Parses `argv` strictly against `spec`; `--help`/`-h` is always accepted.
 * @throws {UsageError} for an unknown flag, a missing value or an unexpected argument.
 */
export function parseCommandArgs(argv: readonly string[], spec: ArgsSpec): ParsedArgs {
  if (!Array.isArray(argv) || !Array.from(argv as unknown[]).every((a) => typeof a === 'string')) throw new UsageError(`arguments must be strings, got ${describeValue(argv)}`);
  checkSpec(spec);
  const options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }> = {
    help: { type: 'boolean', short: 'h' },
  };
  for (const [name, flag] of Object.entries(spec.flags)) {
    options[name] = { type: flag.type, ...(flag.multiple ? { multiple: true } : {}), ...(flag.short ? { short: flag.short } : {}) };
  }
  try {
    const { values, positionals } = parseArgs({ args: [...argv], options, allowPositionals: spec.positionals !== undefined, strict: true });
    return { values: values as ParsedArgs['values'], positionals };
  } catch (cause) {
    throw new UsageError(describeParseError(cause), { cause });
  }
}

/** A command's flag table, as its own code writes it; a malformed one is a UsageError, not a TypeError. */
function checkSpec(spec: unknown): asserts spec is ArgsSpec {
  const flags = (spec as { flags?: unknown } | null)?.flags;
  if (spec === null || typeof spec !== 'object' || flags === null || typeof flags !== 'object') throw new UsageError('a command spec must be { flags, positionals? }');
  for (const [name, f] of Object.entries(flags)) {
    const flag = f as Partial<FlagSpec> | null;
    if (flag === null || typeof flag !== 'object' || (flag.type !== 'string' && flag.type !== 'boolean') || typeof flag.description !== 'string') {
      throw new UsageError(`flag --${name}: a flag spec must be { type: 'string' | 'boolean', description, value?, multiple?, short? }`);
    }
  }
  if ((spec as ArgsSpec).positionals !== undefined && typeof (spec as ArgsSpec).positionals !== 'string') throw new UsageError('"positionals" must be a string');
}

function describeParseError(cause: unknown): string {
  const code = (cause as { code?: unknown } | null)?.code;
  const message = cause instanceof Error ? cause.message : String(cause);
  const quoted = /'([^']+)'/.exec(message)?.[1];
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown flag ${quoted ?? message} (see --help)`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE': {
      const flag = /--[\w-]+/.exec(message)?.[0];
      return flag ? `flag ${flag} needs a value (see --help)` : message.split('\n')[0] ?? message;
    }
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument ${quoted ? `"${quoted}"` : message} (see --help)`;
    default:
      return message.split('\n')[0] ?? message;
  }
}

/** A string flag's value, or `undefined` if absent. */
export function stringFlag(args: ParsedArgs, name: string): string | undefined {
  const values = (args as { values?: unknown } | null)?.values;
  if (values === null || typeof values !== 'object' || typeof name !== 'string') throw new UsageError('stringFlag needs parsed arguments and a flag name');
  const v = Object.hasOwn(values, name) ? (values as Record<string, unknown>)[name] : undefined;
  return typeof v === 'string' ? v : undefined;
}

/** A string flag that must be given. @throws {UsageError} when absent. */
export function requiredFlag(args: ParsedArgs, name: string): string {
  const v = stringFlag(args, name);
  if (v === undefined) throw new UsageError(`missing required flag --${name} (see --help)`);
  if (v.length === 0) throw new UsageError(`flag --${name} needs a non-empty value`);
  return v;
}

const integerText = z.string().regex(/^-?\d+$/, 'must be an integer').transform(Number);

/**
 * An integer flag within `[min, max]`, or `undefined` if absent.
 * @throws {UsageError} naming the flag when the value is not such an integer.
 */
export function integerFlag(args: ParsedArgs, name: string, min: number, max: number): number | undefined {
  if (typeof name !== 'string' || !Number.isSafeInteger(min) || !Number.isSafeInteger(max) || min > max) {
    throw new UsageError(`integerFlag needs a flag name and integer bounds with min <= max, got ${describeValue(name)}, ${describeValue(min)}, ${describeValue(max)}`);
  }
  const raw = stringFlag(args, name);
  if (raw === undefined) return undefined;
  const parsed = integerText.pipe(z.int().min(min, `must be >= ${min}`).max(max, `must be <= ${max}`)).safeParse(raw);
  if (!parsed.success) throw new UsageError(`flag --${name}: ${parsed.error.issues[0]?.message ?? 'invalid'}, got "${raw}"`);
  return parsed.data;
}

/** The help text of a command, generated from its flags. */
export function helpText(command: string, summary: string, spec: ArgsSpec, details = ''): string {
  if (typeof command !== 'string' || typeof summary !== 'string' || typeof details !== 'string') throw new UsageError('helpText needs a command name, a summary and details as strings');
  checkSpec(spec);
  const usage = `Usage: hecate-node ${command}${Object.keys(spec.flags).length > 0 ? ' [flags]' : ''}${spec.positionals ? ` ${spec.positionals}` : ''}`;
  const rows: [string, string][] = Object.entries(spec.flags).map(([name, f]) => [`--${name}${f.value ? ` <${f.value}>` : ''}`, f.description]);
  rows.push(['-h, --help', 'Show this help.']);
  const width = Math.max(...rows.map(([left]) => left.length));
  const flags = rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`).join('\n');
  return `${usage}\n\n${summary}\n\nFlags:\n${flags}\n${details ? `\n${details.trimEnd()}\n` : ''}`;
}
