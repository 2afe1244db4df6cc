/** `hecate-node swarm-sim`: reads the topology, runs the lifecycle in memory, prints one JSON document. */
import { z } from 'zod';
import { nodeProfileSchema, loadTopology } from '../sim/topology.js';
import { runSwarmSim, swarmSimOptionIssue, type SwarmSimOptions } from '../sim/swarm-sim.js';
import type { NodeProfile } from '../core/types.js';
import { helpText, integerFlag, parseCommandArgs, requiredFlag, stringFlag, UsageError, type ArgsSpec } from './args.js';
import type { Command } from './command.js';
import { commandSummary } from './commands.js';
import { readInput } from './io.js';
import { seeIt } from './see.js';

const spec: ArgsSpec = {
  flags: {
    topology: { type: 'string', value: 'file', description: 'Topology JSON { models, nodes } (required).' },
    kill: { type: 'string', value: 'id', description: 'The node that fails (default: the first node of the initial route).' },
    pipelines: { type: 'string', value: 'n', description: 'Number of copies of every model, 1-64 (default: each model\'s own "pipelines", else 1).' },
    add: { type: 'string', value: 'id:memoryGb[:score[:latencyMs]]', description: 'The newcomer of the growth step (default: a twin of the killed node, id <kill>-2).' },
    retire: { type: 'string', value: 'id', description: 'Also retire this node (it may be the newcomer) in a last "retire" step.' },
    'no-revive': { type: 'boolean', description: 'Skip the "revive" step (markAlive of the killed node).' },
    rebalance: { type: 'boolean', description: 'End with a "rebalance" step (docs/rebalance.md): its moves, run to their end; the HTML report shows each.' },
    model: { type: 'string', value: 'id', description: 'Model whose route each step reports (default: the base model).' },
    tokens: { type: 'string', value: 'n', description: 'Tokens of the request routed after each step (default 512).' },
    seed: { type: 'string', value: 'n', description: 'Seed of the id source: new copies get the ids a library swarm with this seed mints (default: numbered, <model>/new-1). The same flags print the same bytes.' },
    inspect: { type: 'string', value: 'ws-url', description: 'Stream XState inspection events to a Stately-compatible WebSocket inspector (loopback only).' },
    'inspect-remote': { type: 'boolean', description: 'Allow --inspect to an address other than loopback.' },
    html: { type: 'string', value: 'file', description: 'Also write a self-contained HTML report: one step at a time at #step=N, one row per copy, a filter by node id.' },
  },
};

const SUMMARY = commandSummary('swarm-sim');
const DETAILS = `Steps: start (initial route), failover (markDown of --kill: the rescue and the new route),
growth (addNode of the newcomer: its role), revive (markAlive of the killed node), retire
(removeNode of --retire, if given). Each step reports "status" and the "route" served after it;
the document ends with the final "plan" and "planValid".

Example:
  hecate-node swarm-sim --topology examples/swarm.json --kill gpu --pipelines 2 --seed 1`;

const addSchema = z
  .string()
  .regex(/^[^:]+(:[^:]*){1,3}$/, 'expected id:memoryGb[:score[:latencyMs]]')
  .transform((s) => {
    const [id, memoryGb, score, latencyMs] = s.split(':');
    const num = (v: string | undefined) => (v === undefined || v === '' ? undefined : Number(v));
    return { id, memoryGb: num(memoryGb), ...(score ? { score: num(score) } : {}), ...(latencyMs ? { latencyMs: num(latencyMs) } : {}) };
  })
  .pipe(nodeProfileSchema);

function parseNewcomer(raw: string | undefined): NodeProfile | undefined {
  if (raw === undefined) return undefined;
  const parsed = addSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue?.path.length ? ` ${issue.path.join('.')}` : '';
  throw new UsageError(`flag --add${field}: ${issue?.message ?? 'invalid'}, got "${raw}"`);
}

/** The `swarm-sim` command. */
export const command: Command = {
  name: 'swarm-sim',
  summary: SUMMARY,
  async run(argv, io) {
    const args = parseCommandArgs(argv, spec);
    if (args.values['help'] === true) {
      io.stdout(helpText('swarm-sim', SUMMARY, spec, DETAILS));
      return 0;
    }
    const file = requiredFlag(args, 'topology');
    const pipelines = integerFlag(args, 'pipelines', 1, 64);
    const seed = integerFlag(args, 'seed', 0, 2 ** 32 - 1);
    const tokens = integerFlag(args, 'tokens', 0, 1_000_000_000);
    const add = parseNewcomer(stringFlag(args, 'add'));
    const text = readInput(io, file);
    if (!text.ok) throw text.error;
    const topology = loadTopology(text.value, file, pipelines === undefined ? {} : { pipelines });
    if (!topology.ok) throw topology.error;
    const kill = stringFlag(args, 'kill');
    const retire = stringFlag(args, 'retire');
    const model = stringFlag(args, 'model');
    const options: SwarmSimOptions = {
      source: file,
      ...(kill === undefined ? {} : { kill }),
      ...(add === undefined ? {} : { add }),
      ...(retire === undefined ? {} : { retire }),
      ...(model === undefined ? {} : { model }),
      ...(tokens === undefined ? {} : { tokens }),
      ...(seed === undefined ? {} : { seed }),
      ...(pipelines === undefined ? {} : { pipelines }),
      revive: args.values['no-revive'] !== true,
      ...(args.values['rebalance'] === true ? { rebalance: true } : {}),
    };
    const issue = swarmSimOptionIssue(topology.value, options);
    if (issue !== undefined) throw new UsageError(issue);
    const report = await seeIt(args, io, topology.value, options, runSwarmSim);
    io.stdout(`${JSON.stringify(report, null, 2)}\n`);
    return 0;
  },
};
