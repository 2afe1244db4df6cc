/**
 * `--nats URL --swarm NAME` of `hecate-node serve`: several orchestrators on one swarm
 * (docs/serve.md, "Several orchestrators"). Checked here so a bad value is a one-line exit 2
 * before anything connects.
 */
import { stringFlag, UsageError, type ParsedArgs } from './args.js';

/** Where the orchestrator's swarm is replicated: NATS servers and the swarm's name. */
export interface ReplicationFlags {
  /** NATS server URLs (`nats://host:port`), in the order given. */
  readonly servers: readonly string[];
  /** The swarm's name: every orchestrator given the same name serves the same swarm. */
  readonly swarm: string;
}

/** A NATS server: `nats://` or `tls://`, a host (name, IPv4 or [IPv6]) and an optional port. */
const SERVER = /^(nats|tls):\/\/(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/;
/** A swarm name is a token of NATS subjects and stream names: no dots, wildcards or spaces. */
const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * `--nats` and `--swarm`, both or neither.
 * @returns the servers and the name, or `undefined` when neither flag is given.
 * @throws {UsageError} naming the flag: one given without the other, a URL that is not
 *   `nats://host[:port]` (several separated by commas), a port out of range, a bad name.
 */
export function replicationFlags(args: ParsedArgs): ReplicationFlags | undefined {
  const nats = stringFlag(args, 'nats');
  const swarm = stringFlag(args, 'swarm');
  if (nats === undefined && swarm === undefined) return undefined;
  if (nats === undefined) throw new UsageError('flag --swarm needs --nats URL: the swarm is replicated through a NATS server');
  if (swarm === undefined) throw new UsageError('flag --nats needs --swarm NAME: the name every orchestrator of the swarm shares');
  const servers = nats.split(',').map((s) => s.trim());
  for (const server of servers) {
    const match = SERVER.exec(server);
    if (match === null) throw new UsageError(`flag --nats: expected nats://host[:port] (several separated by commas), got "${server}"`);
    const port = match[3] === undefined ? 4222 : Number(match[3]);
    if (port < 1 || port > 65535) throw new UsageError(`flag --nats: port must be 1-65535, got ${port} in "${server}"`);
  }
  if (!NAME.test(swarm)) throw new UsageError(`flag --swarm: letters, digits, "_" and "-" only, 1-64 of them (it names NATS subjects and a stream), got "${swarm}"`);
  return { servers, swarm };
}
