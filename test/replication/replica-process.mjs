// A replica in its own process, for the kill test: connects to a replicated swarm (built
// package), then proposes downs and revivals for ever, printing the last applied sequence
// after each. The test kills it with SIGKILL: no close, no cleanup.
import { connectSwarm } from '../../dist/src/replication/index.js';

const [url, swarm, replicaId] = process.argv.slice(2);
const rs = await connectSwarm({ servers: url, swarm, replicaId });
process.stdout.write(`ready ${rs.stats().applied}\n`);
const ids = ['gpu', 'desktop', 'laptop', 'phone'];
for (let n = 0; ; n++) {
  const id = ids[(n >> 1) % ids.length];
  try {
    await (n % 2 === 0 ? rs.markDown(id) : rs.markAlive(id));
  } catch {
    // refused alike everywhere (e.g. the last node alive): carry on
  }
  process.stdout.write(`${rs.stats().applied}\n`);
}
