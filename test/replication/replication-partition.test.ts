/**
 * A replica cut off from NATS, a replica killed mid-stream, detectors on two replicas, no-op
 * entries: against a real nats-server with JetStream (docs/replication.md).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ManualClock, swarmConfig } from '../../src/index.js';
import { nodeKey, type NodeActorRef } from '../../machines/swarm.machine.js';
import { type LogEntry, type ReplicatedSwarm, type ReplicationStatus } from '../../src/replication/index.js';
import { TcpCut } from './nats-server.js';
import { proposeRandom } from './random-events.js';
import { converged, natsFixture, PROFILES, swarmName, until } from './replicas.js';

const nats = natsFixture();
const replica = nats.replica.bind(nats);


describe('a replica cut off from NATS', () => {
  it('keeps routing on its last view, says it is disconnected, and rejoins caught up', async () => {
    const name = swarmName('cut');
    const relay = await TcpCut.to(nats.server.port);
    try {
      const a = await replica(name);
      const c = await replica(name, { servers: relay.url, proposeTimeoutMs: 500, reconcileAfterMs: 100 });
      const statuses: ReplicationStatus[] = [];
      c.on('replication.changed', (e: { status: ReplicationStatus }) => statuses.push(e.status));
      const before = c.digest();

      relay.cut();
      await until(() => c.replication() === 'disconnected', 'the cut replica to say so');
      await a.markDown('gpu');
      await a.addNode({ id: 'mini', memoryGb: 16, score: 4, latencyMs: 7 });
      // Its last view: gpu still alive there, routes still served.
      expect(c.digest()).toBe(before);
      expect(c.state().nodes['gpu']?.alive).toBe(true);
      expect(c.route({ tokens: 8 }).stages.length).toBeGreaterThan(0);
      expect(c.status()).toBe('healthy');
      // A lifecycle call cannot reach the log: it fails, typed.
      await expect(c.markDown('phone')).rejects.toMatchObject({ name: 'ReplicationError', code: 'Disconnected' });

      relay.heal();
      await until(() => c.replication() === 'connected', 'the replica to rejoin');
      await a.markAlive('laptop'); // a no-op, but one more entry: both must reach it
      await converged([a, c], a.stats().applied);
      // The refused call's publish may still reach the log once reconnected: then both apply it.
      await until(() => a.stats().applied === c.stats().applied, 'both replicas at the same entry');
      expect(c.digest()).toBe(a.digest());
      expect(c.state().nodes['gpu']?.alive).toBe(false);
      expect(c.route().stages.some((s) => s.nodeId === 'gpu')).toBe(false);
      expect(statuses.slice(0, 3)).toEqual(['disconnected', 'catching-up', 'connected']);
      expect(c.stats()).toMatchObject({ applied: a.stats().applied, entries: a.stats().applied });
    } finally {
      await relay.close();
    }
  });
});

describe('a replica killed mid-stream', () => {
  it('restarts, replays the log and converges with the replicas that went on', async () => {
    const script = fileURLToPath(new URL('./replica-process.mjs', import.meta.url));
    expect(existsSync(fileURLToPath(new URL('../../dist/src/replication/index.js', import.meta.url))), 'the build (npm test builds first)').toBe(true);
    const name = swarmName('kill');
    const a = await replica(name);
    const child = spawn(process.execPath, [script, nats.server.url, name, 'victim'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let childApplied = 0;
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      for (const line of d.trim().split('\n')) childApplied = Math.max(childApplied, Number(line.replace('ready ', '')) || 0);
    });
    let exit: string | undefined;
    const exited = new Promise<NodeJS.Signals | null>((r) =>
      child.once('exit', (code, signal) => {
        exit = `code ${String(code)}, signal ${String(signal)}`;
        r(signal);
      }),
    );
    const running = proposeRandom(a, 120, 7, PROFILES.map((p) => p.id), 'k', 2);
    try {
      await until(() => {
        if (exit !== undefined) throw new Error(`the child replica exited before its kill (${exit})`);
        return childApplied > 40;
      }, 'the child replica to apply 40 entries');
    } finally {
      child.kill('SIGKILL'); // mid-stream: no close, no cleanup
    }
    expect(await exited).toBe('SIGKILL');
    const result = await running;
    expect(result.failed).toEqual([]);
    // The victim's proposals that reached the log are applied by everyone; it comes back under its name.
    const back = await replica(name, { replicaId: 'victim' });
    await a.markAlive('gpu').catch(() => undefined); // one more entry after the restart (refused if gpu retired: still an entry)
    const last = a.stats().applied;
    await converged([a, back], last);
    expect(back.digest()).toBe(a.digest());
    expect(back.stats()).toMatchObject({ applied: last, entries: last });
    expect(last).toBeGreaterThan(1 + 120);
  });
});

describe('detectors on two replicas', () => {
  it('both take a silent node down: one down is applied; both hear it back: one revival', async () => {
    const name = swarmName('detect');
    const config = { ...swarmConfig(12, 2), failureDetector: { expectedIntervalMs: 100, acceptablePauseMs: 0, minStdDevMs: 10 } };
    const clocks = [new ManualClock(), new ManualClock()];
    const [a, b] = [await replica(name, { config, clock: clocks[0] }), await replica(name, { config, clock: clocks[1] })] as [ReplicatedSwarm, ReplicatedSwarm];
    const downs = [0, 0];
    const alives = [0, 0];
    const marks: LogEntry[] = [];
    [a, b].forEach((r, i) => {
      r.on('node.down', (e: { nodeId: string }) => void (e.nodeId === 'gpu' && downs[i]!++));
      r.on('node.alive', (e: { nodeId: string }) => void (e.nodeId === 'gpu' && alives[i]!++));
    });
    a.on('replication.applied', (e: { entry: LogEntry }) => void (e.entry.type === 'swarm.event' && e.entry.basis !== undefined && marks.push(e.entry)));
    const heard = (r: ReplicatedSwarm, i: number) => (r.swarmReplica.actor.system.get(nodeKey('gpu')) as NodeActorRef | undefined)?.getSnapshot().context.health.lastHeartbeatAt === clocks[i]?.now();
    const beat = async () => {
      a.heartbeat('gpu'); // over NATS to both replicas, a included
      await until(() => heard(a, 0) && heard(b, 1), 'both replicas to hear the heartbeat');
    };
    for (let t = 0; t < 8; t++) {
      await beat();
      for (const c of clocks) c.advance(100);
    }
    // Silence: both detectors cross the threshold at once, before either hears of the other.
    for (const c of clocks) c.advance(10_000);
    await until(() => downs[0] === 1 && downs[1] === 1, 'the down on both replicas');
    await until(() => marks.length >= 2, 'both replicas\' marks on the log');
    await beat(); // back: both detectors report the revival
    await until(() => alives[0] === 1 && alives[1] === 1, 'the revival on both replicas');
    await until(() => marks.length >= 4, 'both revivals on the log');
    const last = Math.max(a.stats().applied, b.stats().applied);
    await converged([a, b], last);
    expect(marks.map((m) => (m.type === 'swarm.event' ? `${m.event.type}:${'cause' in m.event ? m.event.cause : ''}` : m.type))).toEqual(['node.down:detector', 'node.down:detector', 'node.alive:heartbeat', 'node.alive:heartbeat']);
    expect(downs).toEqual([1, 1]);
    expect(alives).toEqual([1, 1]);
    expect(a.stats().staleMarks + b.stats().staleMarks).toBe(2);
    expect(b.digest()).toBe(a.digest());
    expect(a.status()).toBe('healthy');
  });
});

describe('ejection on one replica', () => {
  it('goes through the log: one replica\'s failed requests eject the node on every replica; the ban\'s end brings it back once', async () => {
    const name = swarmName('eject');
    const config = { ...swarmConfig(12, 2), ejection: { consecutiveFailures: 3, banMs: 1000 } };
    const clocks = [new ManualClock(), new ManualClock()];
    const [a, b] = [await replica(name, { config, clock: clocks[0] }), await replica(name, { config, clock: clocks[1] })] as [ReplicatedSwarm, ReplicatedSwarm];
    const downs: string[] = [];
    const alives: string[] = [];
    b.on('node.down', (e: { nodeId: string; cause: string }) => void downs.push(`${e.nodeId}:${e.cause}`));
    b.on('node.alive', (e: { nodeId: string; cause: string }) => void alives.push(`${e.nodeId}:${e.cause}`));
    const victim = a.route().stages[0]?.nodeId as string;
    // Three failed requests on a alone (b never routed to it): a's node actor asks for the ejection.
    // Requests held in flight at once spread over the copies (the failures make the victim's dear).
    let failed = 0;
    for (let round = 0; failed < 3 && round < 20; round++) {
      const leases = Array.from({ length: 16 }, () => a.route({}, { reserve: true }).lease);
      for (const lease of leases) {
        const on = failed < 3 && lease.nodes.includes(victim);
        a.release(lease, on ? { ok: false, failedNode: victim } : {});
        if (on) failed++;
      }
    }
    expect(failed).toBe(3);
    await until(() => downs.length === 1, 'the ejection on b');
    expect(downs).toEqual([`${victim}:ejected`]);
    await until(() => a.state().nodes[victim]?.alive === false, 'the ejection on a');
    // Both replicas' node actors wait out the ban; both propose the revival; one is applied.
    for (const c of clocks) c.advance(1000);
    await until(() => alives.length === 1, 'the revival on b');
    expect(alives).toEqual([`${victim}:probation`]);
    await until(() => a.stats().staleMarks + b.stats().staleMarks === 1, 'the second revival found stale');
    await converged([a, b], Math.max(a.stats().applied, b.stats().applied));
    expect(b.digest()).toBe(a.digest());
    expect(a.status()).toBe('healthy');
  });
});

describe('a no-op entry', () => {
  it('changes nothing on any replica: no new snapshot, no event, the same digest', async () => {
    const name = swarmName('noop');
    const [a, b] = [await replica(name), await replica(name)] as [ReplicatedSwarm, ReplicatedSwarm];
    await a.markDown('phone');
    await converged([a, b], a.stats().applied);
    const snapshot = b.swarmReplica.actor.getSnapshot();
    const digest = b.digest();
    const events: string[] = [];
    b.on('*', (e: { type: string }) => events.push(e.type));
    const again = await a.markDown('phone'); // already down
    const alive = await a.markAlive('gpu'); // already alive
    expect(again).toMatchObject({ nodeId: 'phone', recoveries: [], unrecoverable: [] });
    expect(alive.status).toBe(a.status());
    await converged([a, b], a.stats().applied);
    expect(b.swarmReplica.actor.getSnapshot()).toBe(snapshot);
    expect(events).toEqual([]);
    expect(b.digest()).toBe(digest);
    expect(a.digest()).toBe(digest);
  });
});
