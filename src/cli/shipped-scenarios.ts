/**
 * The scenario files the package ships (`scenarios/` beside its package.json, so
 * `node_modules/hecate-swarm/scenarios` in a project): `hecate-node scenario growth` runs
 * `scenarios/growth.json` from wherever the command is run.
 */
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { UsageError } from './usage-error.js';

/**
 * The package's `scenarios/` directory: the nearest one beside a package.json above this module
 * (`dist/src/cli/` in the package, `src/cli/` when the sources run directly).
 */
export function shippedScenariosDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let up = 0; up < 5; up++, dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'scenarios'))) return join(dir, 'scenarios');
  }
  throw new UsageError(`the shipped scenarios are missing: no scenarios/ beside the package.json above ${fileURLToPath(import.meta.url)}`);
}

/** The names of the shipped scenarios (their file names without `.json`), sorted. */
export function shippedScenarioNames(): string[] {
  return readdirSync(shippedScenariosDir())
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -'.json'.length))
    .sort();
}

/** Whether a `scenario` argument is a shipped scenario's name rather than a file: no `/`, `\` or `.` in it. */
export function isScenarioName(argument: string): boolean {
  return argument !== '' && !/[./\\]/.test(argument);
}

/**
 * The path of the shipped scenario `name`.
 * @throws {UsageError} naming the shipped scenarios and where they are, when `name` is not one.
 */
export function shippedScenario(name: string): string {
  const names = shippedScenarioNames();
  if (!names.includes(name)) {
    throw new UsageError(`no shipped scenario "${name}" (a file name needs its .json; shipped: ${names.join(', ')}, in ${shippedScenariosDir()})`);
  }
  return join(shippedScenariosDir(), `${name}.json`);
}
