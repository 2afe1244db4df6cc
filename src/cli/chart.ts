/** `hecate-node chart`: prints the Swarm and node statecharts, generated from the machines themselves. */
import { chartedMachines, chartMermaid, machineChart, type MachineChart } from '../sim/chart.js';
import { helpText, parseCommandArgs, stringFlag, UsageError, type ArgsSpec } from './args.js';
import type { Command } from './command.js';
import { commandSummary } from './commands.js';

const FORMATS = ['mermaid', 'json'] as const;
const MACHINES = Object.keys(chartedMachines) as (keyof typeof chartedMachines)[];

const spec: ArgsSpec = {
  flags: {
    format: { type: 'string', value: 'mermaid|json', description: 'Output format (default mermaid).' },
    machine: { type: 'string', value: MACHINES.join('|'), description: 'Print only this machine (default: all of them, the Swarm first).' },
  },
};

const SUMMARY = commandSummary('chart');
const DETAILS = `Every state; every transition with its event ("always" for eventless), guard and actions in
the order they run. Mermaid: one stateDiagram-v2 per machine, separated by a blank line; the
Swarm's root transitions (node.down, ...) are listed in a note beside it. JSON: { "machines": [...] }.

Examples:
  hecate-node chart
  hecate-node chart --machine swarm > swarm.mmd
  hecate-node chart --format json`;

/** The text `chart` prints for these machines in this format. */
export function renderCharts(format: (typeof FORMATS)[number], machines: readonly (keyof typeof chartedMachines)[]): string {
  if (!(FORMATS as readonly unknown[]).includes(format)) throw new UsageError(`expected a format among ${FORMATS.join(', ')}`);
  if (!Array.isArray(machines as unknown) || !Array.from(machines as unknown[]).every((m) => (MACHINES as readonly unknown[]).includes(m))) throw new UsageError(`expected machines among ${MACHINES.join(', ')}`);
  const charts: MachineChart[] = machines.map((id) => machineChart(chartedMachines[id]));
  if (format === 'json') return `${JSON.stringify({ machines: charts }, null, 2)}\n`;
  return charts.map(chartMermaid).join('\n');
}

/** The `chart` command. */
export const command: Command = {
  name: 'chart',
  summary: SUMMARY,
  run(argv, io) {
    const args = parseCommandArgs(argv, spec);
    if (args.values['help'] === true) {
      io.stdout(helpText('chart', SUMMARY, spec, DETAILS));
      return 0;
    }
    const format = stringFlag(args, 'format') ?? 'mermaid';
    if (!(FORMATS as readonly string[]).includes(format)) throw new UsageError(`flag --format: expected ${FORMATS.join(' or ')}, got "${format}"`);
    const machine = stringFlag(args, 'machine');
    if (machine !== undefined && !(MACHINES as readonly string[]).includes(machine)) {
      throw new UsageError(`flag --machine: expected ${MACHINES.join(' or ')}, got "${machine}"`);
    }
    const selected = machine === undefined ? MACHINES : [machine as keyof typeof chartedMachines];
    io.stdout(renderCharts(format as (typeof FORMATS)[number], selected));
    return 0;
  },
};
