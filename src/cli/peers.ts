/**
 * The optional peer dependencies of `hecate-node`: the library install (`npm install hecate-swarm
 * xstate`) carries none of them, so each command checks what it needs before it loads and, when a
 * package is missing, says in one line which and the exact install line (docs/install.md). What
 * each command needs is in its entry of `COMMANDS` (commands.ts).
 */
import { COMMANDS } from './commands.js';

/** The install line of the library alone. */
const LIBRARY = 'npm install hecate-swarm xstate';

/** The package name of an install spec: `@nats-io/kv@3.3` → `@nats-io/kv`. */
export function packageName(spec: string): string {
  const at = spec.indexOf('@', 1);
  return at === -1 ? spec : spec.slice(0, at);
}

/**
 * The package a failed import names when it is itself absent (`ERR_MODULE_NOT_FOUND`, "Cannot
 * find package 'zod'"), or `undefined` for any other error, a missing file among them.
 */
export function absentPackage(error: unknown): string | undefined {
  if ((error as { code?: unknown } | null)?.code !== 'ERR_MODULE_NOT_FOUND') return undefined;
  const m = /Cannot find package '((?:@[^/'\s]+\/)?[^/'\s]+)'/.exec(String((error as Error).message));
  return m?.[1];
}

/**
 * The packages of `specs` that cannot be imported from here (so neither from the command's code).
 * @param load how to import a package; the default is `import()` from the CLI's own directory.
 */
export async function missingPeers(specs: readonly string[], load: (name: string) => Promise<unknown> = (name) => import(name)): Promise<string[]> {
  const missing: string[] = [];
  for (const spec of specs) {
    const name = packageName(spec);
    try {
      await load(name);
    } catch (error) {
      if (absentPackage(error) !== name) throw error;
      missing.push(name);
    }
  }
  return missing;
}

/** `a`, `a and b`, `a, b and c`. */
function names(list: readonly string[]): string {
  return list.length <= 1 ? (list[0] ?? '') : `${list.slice(0, -1).join(', ')} and ${list[list.length - 1] ?? ''}`;
}

/**
 * The one line a command prints when packages are missing: what it needs and the install line with
 * everything the command needs, e.g. `hecate-node serve needs fastify and zod: npm install
 * hecate-swarm xstate fastify prom-client undici zod`.
 */
export function missingPeersMessage(command: string, missing: readonly string[]): string {
  const entry = COMMANDS.get(command);
  const specs = [...(entry?.peers ?? [])];
  for (const name of missing) {
    const group = entry?.flagPeers.find((g) => g.some((spec) => packageName(spec) === name)) ?? [name];
    for (const spec of group) if (!specs.some((s) => packageName(s) === packageName(spec))) specs.push(spec);
  }
  return `hecate-node ${command} needs ${names(missing)}: ${LIBRARY} ${specs.join(' ')}`;
}
