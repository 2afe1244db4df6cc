/**
 * The subcommands of `hecate-node`: each one's summary for `--help`, and how to load its module.
 * The summaries live here, not in the command modules, so that `hecate-node --help` imports no
 * command: a command's module imports its optional peers (zod, fastify…), and the overview must
 * print on the library install alone (`npm install hecate-swarm xstate`; docs/install.md).
 */
import type { Command } from './command.js';
import { UsageError } from './usage-error.js';

/** One subcommand as the dispatcher knows it before loading it. */
export interface CommandEntry {
  /** One line for `hecate-node --help` and the command's own `--help`. */
  readonly summary: string;
  /**
   * The optional peers the command's module imports, as install specs: checked before it loads,
   * `--help` included. Every command parses its flags with zod.
   */
  readonly peers: readonly string[];
  /**
   * Peers that only a flag or the running command loads, each group installed together (the
   * command's `--help` works without them).
   */
  readonly flagPeers: readonly (readonly string[])[];
  /** Imports the command's module (and with it the packages it needs). */
  readonly load: () => Promise<{ command: Command }>;
}

/**
 * NATS for `serve --nats`: the 3.3 line, whose `@nats-io/nuid` runs on Node 20 (3.4 wants Node 22).
 */
const NATS = ['@nats-io/jetstream@3.3', '@nats-io/kv@3.3', '@nats-io/transport-node@3.3'];
/** The tokenizer library `serve --model` and `agent --model --openai` read the model's tokenizer.json with. */
const TOKENIZERS = ['@huggingface/tokenizers'];
/** The inspector client of `swarm-sim --inspect`. */
const INSPECT = ['ws', '@statelyai/inspect'];

/** Every subcommand, in the order `--help` lists them. Adding a command is one entry here plus its own file. */
export const COMMANDS: ReadonlyMap<string, CommandEntry> = new Map<string, CommandEntry>([
  ['swarm-sim', { summary: "Run a swarm's lifecycle in memory (start, failover, growth, revive, retire) and print it as JSON.", peers: ['zod'], flagPeers: [INSPECT], load: () => import('./swarm-sim.js') }],
  ['scenario', { summary: 'Run scenario files (a topology and steps with expectations) against the runtime.', peers: ['zod'], flagPeers: [], load: () => import('./scenario.js') }],
  ['chart', { summary: 'Print the Swarm and node statecharts (Mermaid or JSON), generated from the machines.', peers: ['zod'], flagPeers: [], load: () => import('./chart.js') }],
  ['load-sim', { summary: 'Simulate load spreading (seeded, virtual time) and compare balancers with the Swarm.', peers: ['zod'], flagPeers: [], load: () => import('./load-sim.js') }],
  ['serve', { summary: 'Run the HTTP orchestrator: agents join it, POST /v1/generate (and with --model POST /v1/completions) runs sessions over them.', peers: ['fastify', 'prom-client', 'undici', 'zod'], flagPeers: [NATS, ['@huggingface/jinja'], TOKENIZERS], load: () => import('./serve.js') }],
  ['agent', { summary: 'Run a stage server that joins an orchestrator: the reference Llama engine on --model DIR (with --openai the whole model behind the OpenAI API), else a stand-in (real time and a checked digest).', peers: ['fastify', 'undici', 'zod'], flagPeers: [['@huggingface/jinja'], TOKENIZERS], load: () => import('./agent.js') }],
  ['inspector', { summary: 'Run a local inspector: print the inspection events of swarm-sim --inspect as JSON lines.', peers: ['zod'], flagPeers: [['ws']], load: () => import('./inspector.js') }],
  ['conformance', { summary: 'Check a stage server (any language) against the stage wire protocol, and print what holds.', peers: ['fastify', 'zod'], flagPeers: [], load: () => import('./conformance.js') }],
  ['make-model', { summary: 'Write a small deterministic random-weight Llama model (Hugging Face layout) to a directory.', peers: ['zod'], flagPeers: [], load: () => import('./make-model.js') }],
]);

/** The summary of the command `name` (a name of {@link COMMANDS}). */
export function commandSummary(name: string): string {
  const entry = COMMANDS.get(name);
  if (entry === undefined) throw new UsageError(`no hecate-node command "${name}" (commands: ${[...COMMANDS.keys()].join(', ')})`);
  return entry.summary;
}
