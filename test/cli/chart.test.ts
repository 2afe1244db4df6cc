import { describe, expect, it } from 'vitest';
import { nodeMachine } from '../../machines/node.machine.js';
import { swarmMachine } from '../../machines/swarm.machine.js';
import { chartMermaid, guardName, machineChart, transitionLabel, type MachineChart } from '../../src/sim/chart.js';
import { renderCharts } from '../../src/cli/chart.js';
import { cli } from './run-cli.js';

// `npm test` builds first (pretest); in a manual run, `npm run build` before vitest.

/** One transition as read straight from a machine's config object (not from its state nodes). */
interface ConfigTransition {
  source: string;
  event: string | null;
  guard: string | null;
  targets: string[];
  actions: string[];
}

interface ConfigNode {
  id?: string;
  type?: string;
  initial?: string;
  entry?: unknown;
  states?: Record<string, ConfigNode>;
  on?: Record<string, unknown>;
  after?: Record<string, unknown>;
  always?: unknown;
}

const list = <T>(v: T | readonly T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? [...(v as T[])] : [v as T]);

/**
 * An independent reading of the statechart: the raw config (`machine.config`), resolving targets
 * by key among siblings. The generated chart must contain exactly these states and transitions.
 */
function fromConfig(config: ConfigNode, rootId: string): { states: string[]; transitions: ConfigTransition[] } {
  const states: string[] = [];
  const transitions: ConfigTransition[] = [];
  const walk = (node: ConfigNode, id: string): void => {
    states.push(id);
    const parent = id.includes('.') ? id.slice(0, id.lastIndexOf('.')) : id;
    const resolve = (target: unknown): string => {
      const key = String(target);
      if (key.startsWith('#')) return key.slice(1);
      if (key.startsWith('.')) return `${id}${key}`;
      return node.states?.[key] !== undefined ? `${id}.${key}` : `${parent}.${key}`;
    };
    const add = (event: string | null, raw: unknown): void => {
      for (const t of list(raw)) {
        const def = typeof t === 'string' ? { target: t } : (t as { target?: unknown; guard?: unknown; actions?: unknown });
        transitions.push({
          source: id,
          event,
          guard: def.guard === undefined ? null : guardName(def.guard),
          targets: list(def.target as string | string[] | undefined).map(resolve),
          actions: list(def.actions as string | string[] | undefined).map(String),
        });
      }
    };
    for (const [event, raw] of Object.entries(node.on ?? {})) add(event, raw);
    for (const [delay, raw] of Object.entries(node.after ?? {})) add(`after ${delay}`, raw);
    add(null, node.always);
    for (const [key, child] of Object.entries(node.states ?? {})) walk(child, `${id}.${key}`);
  };
  walk(config, rootId);
  return { states, transitions };
}

const machines = [
  ['swarm', swarmMachine],
  ['node', nodeMachine],
] as const;

describe('machineChart', () => {
  for (const [name, machine] of machines) {
    const chart = machineChart(machine);
    const truth = fromConfig(machine.config as ConfigNode, machine.id);

    it(`lists every state of the ${name} machine`, () => {
      expect(chart.states.map((s) => s.id).sort()).toEqual([...truth.states].sort());
    });

    it(`lists every transition of the ${name} machine with its event, guard, targets and ordered actions`, () => {
      const key = (t: ConfigTransition | MachineChart['transitions'][number]) => JSON.stringify([t.source, t.event, t.guard, [...t.targets], [...t.actions]]);
      expect(chart.transitions.map(key).sort()).toEqual(truth.transitions.map(key).sort());
    });

    it(`draws every state and every transition of the ${name} machine in Mermaid`, () => {
      const mermaid = chartMermaid(chart);
      expect(mermaid.startsWith('stateDiagram-v2\n')).toBe(true);
      for (const s of chart.states) {
        const id = s.path.length === 0 ? chart.id : s.path.join('_');
        expect(mermaid).toMatch(new RegExp(`(^|\\s)${id}(\\s|$)`, 'm'));
      }
      for (const t of chart.transitions) {
        const label = transitionLabel(t);
        const source = t.source.split('.').slice(1).join('_') || chart.id;
        if (t.targets.length === 0) {
          // A targetless transition: a self-loop on a leaf, a line of the note on a compound state.
          const asLoop = `${source} --> ${source} : ${label}`;
          const asNote = new RegExp(`note right of ${source}\\n(\\s+.*\\n)*?\\s+${escapeRegExp(label)}\\n`);
          expect(mermaid.includes(asLoop) || asNote.test(mermaid), `${t.source} ${label}`).toBe(true);
        } else {
          for (const target of t.targets) expect(mermaid).toContain(`${source} --> ${target.split('.').slice(1).join('_')} : ${label}`);
        }
      }
    });
  }

  it('keeps the order of node.down: the rescue is computed before the node is marked down, then the node is told', () => {
    // (Under a policy that defers own marks, a node actor's own mark is handed to the owner first: docs/machine.md.)
    const downs = machineChart(swarmMachine).transitions.filter((t) => t.event === 'node.down');
    expect(downs[0]).toMatchObject({ guard: 'defersOwnMarks && isOwnMark', actions: ['deferMark'] });
    const down = downs.find((t) => t.guard === 'isAliveMember');
    expect(down).toMatchObject({ source: 'swarm', guard: 'isAliveMember', targets: [], actions: ['computeRescue', 'markNodeDown', 'recordDetected', 'recordQuarantined', 'ensureNodeActor', 'tellNodeDown', 'emitNodeDown', 'abortMoves'] });
    expect(chartMermaid(machineChart(swarmMachine))).toContain('node.down [isAliveMember] / computeRescue → markNodeDown → recordDetected → recordQuarantined → ensureNodeActor → tellNodeDown → emitNodeDown → abortMoves');
    // An ejection goes the same way: rescue first, then the mark.
    const eject = machineChart(swarmMachine).transitions.find((t) => t.event === 'node.eject' && t.guard === 'isAliveMember && ejectionRoom');
    expect(eject?.actions.slice(0, 2)).toEqual(['computeRescue', 'markNodeDown']);
  });

  it('names a combined guard by its parts and shows eventless transitions as "always", in priority order', () => {
    const failed = machineChart(swarmMachine).transitions.filter((t) => t.source === 'swarm.failed' && t.event === null);
    expect(failed.map((t) => [t.guard, t.targets])).toEqual([
      ['someAlive && allPlanNodesAlive', ['swarm.healthy']],
      ['someAlive', ['swarm.degraded']],
    ]);
    expect(chartMermaid(machineChart(swarmMachine))).toContain('failed --> healthy : always [someAlive && allPlanNodesAlive]');
  });

  it('marks the initial and final states', () => {
    const swarm = chartMermaid(machineChart(swarmMachine));
    expect(swarm).toContain('[*] --> healthy');
    expect(swarm).toContain('stopped --> [*]');
    expect(swarm).toMatch(/note right of stopped\n\s+entry \/ stopNodes/);
    const node = chartMermaid(machineChart(nodeMachine));
    expect(node).toContain('[*] --> unmonitored');
    expect(node).toContain('retired --> [*]');
  });
});

describe('hecate-node chart', () => {
  it('prints both statecharts as Mermaid by default, the Swarm first', async () => {
    const r = await cli('chart');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${chartMermaid(machineChart(swarmMachine))}\n${chartMermaid(machineChart(nodeMachine))}`);
    expect(r.stdout).toBe(renderCharts('mermaid', ['swarm', 'node']));
  });

  it('prints one machine with --machine, and JSON with --format json', async () => {
    const [one, json] = await Promise.all([cli('chart', '--machine', 'node'), cli('chart', '--format', 'json')]);
    expect(one.stdout).toBe(chartMermaid(machineChart(nodeMachine)));
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout) as { machines: MachineChart[] };
    expect(doc.machines.map((m) => m.id)).toEqual(['swarm', 'node']);
    expect(doc.machines[0]).toEqual(JSON.parse(JSON.stringify(machineChart(swarmMachine))));
  });

  it('rejects an unknown format or machine with exit 2 and one line naming the flag', async () => {
    const [format, machine] = await Promise.all([cli('chart', '--format', 'yaml'), cli('chart', '--machine', 'router')]);
    for (const r of [format, machine]) {
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(format.stderr).toContain('--format');
    expect(machine.stderr).toContain('--machine');
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
