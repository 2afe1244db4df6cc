/** `hecate-node scenario <file|name...>`: runs scenario files (or the shipped ones, by name) against the real runtime and reports every expectation. */
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { describeValue } from '../core/describe.js';
import { loadScenario, runScenario, type ExpectationResult, type Scenario, type ScenarioResult } from '../sim/scenario.js';
import { loadTopology } from '../sim/topology.js';
import { helpText, parseCommandArgs, UsageError, type ArgsSpec } from './args.js';
import type { CliIO, Command } from './command.js';
import { commandSummary } from './commands.js';
import { readInput } from './io.js';
import { isScenarioName, shippedScenario, shippedScenarioNames } from './shipped-scenarios.js';

const spec: ArgsSpec = {
  flags: {
    json: { type: 'boolean', description: 'Print the results as one JSON document instead of text.' },
    quiet: { type: 'boolean', description: 'Text output: only failed expectations and the summary.' },
  },
  positionals: '<file|name...>',
};

const SUMMARY = commandSummary('scenario');
const DETAILS = `A scenario is JSON: { name, description?, topology, pipelines?, allowDegraded?, seed?, steps }.
"topology" is inline { models, nodes } or a path relative to the scenario file. Each step is
{ "step": "kill"|"revive"|"remove", "node": id } | { "step": "add", "node": NodeProfile }
| { "step": "report", "node": id, "sample": { load?, latencyMs?, score? } }
| { "step": "route", "model"?, "tokens"? } | { "step": "stop" }, with an optional "expect":
{ status, error, model, strategy, modelId, pipelineId, degraded, avoid, use, missingLayers,
  replaced, unrecoverable, role, growthModel, relocated, dropped, planValid }.
Every step also checks that it raised no unexpected error and that the plan still validates.

A name without a dot or slash is a scenario the package ships (node_modules/hecate-swarm/scenarios
in a project, scenarios/ in a checkout): ${shippedList()}.

Exit codes: 0 every expectation held, 1 one failed, 2 a file is missing or invalid.

Examples:
  hecate-node scenario growth retirement
  hecate-node scenario my-scenarios/*.json`;

/** The shipped scenarios' names, or why there are none. */
function shippedList(): string {
  try {
    return shippedScenarioNames().join(', ');
  } catch {
    return '(none found)';
  }
}

/** The `scenario` command. */
export const command: Command = {
  name: 'scenario',
  summary: SUMMARY,
  run(argv, io) {
    const args = parseCommandArgs(argv, spec);
    if (args.values['help'] === true) {
      io.stdout(helpText('scenario', SUMMARY, spec, DETAILS));
      return 0;
    }
    if (args.positionals.length === 0) throw new UsageError(`no scenario file or name given (usage: hecate-node scenario <file|name...>; shipped: ${shippedList()})`);
    // Validate every file before running any, so bad input never leaves half a report on stdout.
    const scenarios = args.positionals.map((file) => load(io, isScenarioName(file) ? shippedScenario(file) : file));
    const results = scenarios.map(runScenario);
    io.stdout(args.values['json'] === true ? `${JSON.stringify({ pass: results.every((r) => r.pass), scenarios: results }, null, 2)}\n` : formatText(results, args.values['quiet'] === true));
    return results.every((r) => r.pass) ? 0 : 1;
  },
};

function load(io: CliIO, file: string): Scenario {
  const text = readInput(io, file);
  if (!text.ok) throw text.error;
  const scenario = loadScenario(text.value, file, (ref, options) => {
    const path = join(dirname(file), ref);
    const topo = readInput(io, path);
    return topo.ok ? loadTopology(topo.value, path, options) : topo;
  });
  if (!scenario.ok) throw scenario.error;
  return scenario.value;
}

const expectationResult = z.looseObject({ name: z.string(), expected: z.unknown(), actual: z.unknown(), pass: z.boolean(), implicit: z.boolean() });
const resultsSchema = z.array(
  z.looseObject({
    file: z.string(),
    name: z.string(),
    pass: z.boolean(),
    steps: z.array(z.looseObject({ index: z.int(), label: z.string(), note: z.string().optional(), pass: z.boolean(), expectations: z.array(expectationResult) })),
  }),
);

/**
 * Text report: one block per scenario, one line per expectation (implicit ones only when they fail).
 * @throws {UsageError} when `results` are not as runScenario returns them.
 */
export function formatText(results: readonly ScenarioResult[], quiet: boolean): string {
  if (!resultsSchema.safeParse(results).success || typeof quiet !== 'boolean') throw new UsageError('formatText needs the results of runScenario and a boolean');
  const lines: string[] = [];
  let passed = 0;
  let failed = 0;
  for (const r of results) {
    lines.push(`${r.pass ? 'PASS' : 'FAIL'} ${r.name} (${r.file})`);
    for (const step of r.steps) {
      const shown = step.expectations.filter((e) => (!e.implicit || !e.pass) && (!quiet || !e.pass));
      for (const e of step.expectations) e.pass ? passed++ : failed++;
      if (shown.length === 0 && (quiet || step.expectations.every((e) => e.implicit))) {
        if (!quiet) lines.push(`  #${step.index + 1} ${step.label}`);
        continue;
      }
      lines.push(`  #${step.index + 1} ${step.label}${step.note ? ` — ${step.note}` : ''}`);
      for (const e of shown) lines.push(`    ${formatExpectation(e)}`);
    }
  }
  const failedScenarios = results.filter((r) => !r.pass).length;
  lines.push('', `${results.length} ${results.length === 1 ? 'scenario' : 'scenarios'} (${failedScenarios} failed), ${passed + failed} expectations: ${passed} passed, ${failed} failed`, '');
  return lines.join('\n');
}

function formatExpectation(e: ExpectationResult): string {
  // "route avoids gpu" says it all; other names read "status: healthy".
  if (e.pass) return `✓ ${e.name}${e.expected === null || /^route (avoids|uses) /.test(e.name) ? '' : `: ${show(e.expected)}`}`;
  return `✗ ${e.name}: expected ${show(e.expected)}, got ${show(e.actual)}`;
}

function show(v: unknown): string {
  if (typeof v === 'string') return v;
  try {
    return JSON.stringify(v) ?? describeValue(v);
  } catch {
    return describeValue(v);
  }
}
