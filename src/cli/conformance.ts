/** `hecate-node conformance`: checks a stage server against the wire protocol (docs/engine.md, "Conformance"). */
import { runConformance } from '../conformance/run-conformance.js';
import { readSecretFile } from '../net/secret-file.js';
import { AuthError } from '../wire/auth-error.js';
import { helpText, integerFlag, parseCommandArgs, stringFlag, UsageError, type ArgsSpec } from './args.js';
import type { Command } from './command.js';
import { commandSummary } from './commands.js';

const spec: ArgsSpec = {
  flags: {
    agent: { type: 'string', value: 'url', description: 'The stage server\'s base URL, as it says in its join (default: the first agent that joins).' },
    'token-file': { type: 'string', value: 'file', description: 'The swarm secret the agent was given: stage calls are signed with it, and unsigned, forged and replayed calls must be refused.' },
    port: { type: 'string', value: 'n', description: 'Port the runner listens on for the agent\'s join (default 0: any free port, printed).' },
    model: { type: 'string', value: 'id', description: 'The model the join\'s answer gives the agent (default base).' },
    layers: { type: 'string', value: 'n', description: 'Its layers: the runner calls the whole model on the agent (default 12).' },
    'timeout-ms': { type: 'string', value: 'ms', description: 'How long the join, the first heartbeat and each call may take (default 30000).' },
  },
};

const SUMMARY = commandSummary('conformance');
const DETAILS = `The runner stands in for the orchestrator: start the agent with --join to the URL it prints
(to stderr), and it checks the join and the heartbeat, the health answer, a step, determinism,
a session continued, a drop, the same step rebuilt from its replay, malformed messages and
spans refused with the error shape, and (with --token-file) signed replies and unsigned, forged
and replayed calls refused. It prints one JSON report; the exit code is 0 when every check
holds, 1 when one does not.

Example:
  hecate-node conformance --port 9099 --token-file .hecate/swarm-token
  hecate-node agent --id c1 --memory 8 --score 1 --join http://127.0.0.1:9099`;

/** The `conformance` command. */
export const command: Command = {
  name: 'conformance',
  summary: SUMMARY,
  async run(argv, io) {
    const args = parseCommandArgs(argv, spec);
    if (args.values['help'] === true) {
      io.stdout(helpText('conformance', SUMMARY, spec, DETAILS));
      return 0;
    }
    const agent = stringFlag(args, 'agent');
    if (agent !== undefined && !/^https?:\/\/[^/\s]+/.test(agent)) throw new UsageError(`flag --agent: expected the agent's base URL (http://host:port), got "${agent}"`);
    const tokenFile = stringFlag(args, 'token-file');
    let secret: Uint8Array | undefined;
    if (tokenFile !== undefined) {
      try {
        secret = readSecretFile(tokenFile);
      } catch (error) {
        if (error instanceof AuthError) throw new UsageError(`flag --token-file: ${error.message}`, { cause: error });
        throw error;
      }
    }
    const port = integerFlag(args, 'port', 0, 65535);
    const layers = integerFlag(args, 'layers', 1, 4096) ?? 12;
    const timeoutMs = integerFlag(args, 'timeout-ms', 100, 600_000);
    const report = await runConformance({
      ...(agent !== undefined ? { agent } : {}),
      ...(secret !== undefined ? { secret } : {}),
      ...(port !== undefined ? { port } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      model: { id: stringFlag(args, 'model') ?? 'base', layers },
      listening: (url) => io.stderr(`hecate-node conformance: waiting for the agent's join at ${url}\n`),
    });
    io.stdout(`${JSON.stringify(report, null, 2)}\n`);
    return report.failed === 0 ? 0 : 1;
  },
};
