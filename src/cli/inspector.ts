/**
 * `hecate-node inspector`: a local inspector to point `swarm-sim --inspect` at. It prints every
 * inspection event as one JSON line on stdout and relays it to `createWebSocketReceiver` clients.
 * Binds 127.0.0.1 unless `--host` says otherwise; opens no browser and needs no network.
 */
import { isLoopbackHost } from './loopback.js';
import { helpText, integerFlag, parseCommandArgs, stringFlag, UsageError, type ArgsSpec } from './args.js';
import type { Command } from './command.js';
import { commandSummary } from './commands.js';
import { listening, untilSignal } from './process-flags.js';

const spec: ArgsSpec = {
  flags: {
    port: { type: 'string', value: 'n', description: 'Port to listen on (default 8080; 0: any free port).' },
    host: { type: 'string', value: 'addr', description: 'Address to bind (default 127.0.0.1: this machine only).' },
  },
};

const SUMMARY = commandSummary('inspector');
const DETAILS = `A WebSocket server that receives the events \`swarm-sim --inspect\` (or
createWebSocketInspector) sends, prints each as one JSON line on stdout, and relays it to every
other connection (createWebSocketReceiver clients). The address goes to stderr. It binds
127.0.0.1: inspection events carry the swarm's plan and telemetry, so another address must be
asked for with --host. No page, no browser, no network. Stops on SIGINT or SIGTERM.
Needs the optional package ws (docs/install.md).

Example:
  hecate-node inspector > events.jsonl &
  hecate-node swarm-sim --topology examples/swarm.json --kill gpu --inspect ws://127.0.0.1:8080`;

/** The `inspector` command. */
export const command: Command = {
  name: 'inspector',
  summary: SUMMARY,
  async run(argv, io) {
    const args = parseCommandArgs(argv, spec);
    if (args.values['help'] === true) {
      io.stdout(helpText('inspector', SUMMARY, spec, DETAILS));
      return 0;
    }
    const port = integerFlag(args, 'port', 0, 65535) ?? 8080;
    const host = stringFlag(args, 'host') ?? '127.0.0.1';
    if (host === '') throw new UsageError('flag --host needs an address');
    // ws loads only now, so --help runs without it; when it is missing, main.ts names the install line.
    const { startInspectorServer: start } = await import('./inspector-server.js');
    const server = await listening(() => start({ host, port, onEvent: (_event, text) => io.stdout(`${text.replace(/\n/g, ' ')}\n`) }), port, host);
    const reach = isLoopbackHost(server.address.address) ? 'this machine only' : 'reachable from other machines: anyone who can reach it reads the plan and telemetry';
    io.stderr(`hecate-node inspector: listening on ${server.url} (${reach}); point swarm-sim --inspect at it\n`);
    const signal = await untilSignal(io);
    const count = server.received();
    await server.close();
    io.stderr(`hecate-node inspector: ${signal}: stopped after ${count} event${count === 1 ? '' : 's'}\n`);
    return 0;
  },
};
