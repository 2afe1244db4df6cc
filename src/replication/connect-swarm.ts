/**
 * `connectSwarm` (docs/replication.md): a replica of a replicated swarm, connected to NATS and
 * caught up with the swarm's log.
 */
import { connectOptionsIssue, type ConnectSwarmOptions } from './connect-options.js';
import { LogStream } from './log-stream.js';
import { connectNats } from './nats-access.js';
import { ReplicatedSwarm } from './replicated-swarm.js';
import { ReplicationError } from './replication-error.js';

/**
 * Connects a replica of a replicated swarm (docs/replication.md): creates the swarm's JetStream
 * stream if missing, writes the genesis if the log is new, replays the log into a local Swarm and
 * resolves once caught up, ready to serve.
 * @throws {ReplicationError} `InvalidInput`, `Refused` (the NATS server refused the credentials or TLS), `NoGenesis` (no genesis within `connectTimeoutMs`), `BadLog`, `UnknownVersion`, `Trimmed` (the log trimmed and no snapshot to start from)
 * @example const rs = await connectSwarm({ servers: 'nats://127.0.0.1:4222', swarm: 'demo', profiles, config: swarmConfig(12, 2) });
 */
export async function connectSwarm(options: ConnectSwarmOptions): Promise<ReplicatedSwarm> {
  const issue = connectOptionsIssue(options);
  if (issue !== undefined) throw new ReplicationError('InvalidInput', issue);
  const servers = typeof options.servers === 'string' ? [options.servers] : [...options.servers];
  const nc = await connectNats(servers, options.nats, options.connectTimeoutMs ?? 30_000);
  let opened: Awaited<ReturnType<typeof LogStream.open>>;
  try {
    opened = await LogStream.open(nc, options.swarm, options.streamReplicas ?? 1);
  } catch (error) {
    await nc.close();
    throw error;
  }
  const rs = new ReplicatedSwarm(nc, opened.log, options);
  try {
    await rs.start(opened.last, opened.first);
  } catch (error) {
    await rs.close();
    throw error;
  }
  return rs;
}
