/**
 * Faults a replicated swarm survives, against a real nats-server with JetStream (no mock of
 * NATS): concurrent proposals from three replicas, the server restarted mid-run, a replica cut
 * off from NATS, a replica killed mid-stream (docs/replication.md).
 */
import { describe, expect, it } from 'vitest';
import { type LogEntry, type ReplicatedSwarm, type ReplicationStatus } from '../../src/replication/index.js';
import { kReplica } from '../../src/replication/replicated-swarm.js';
import { proposeRandom } from './random-events.js';
import { converged, natsFixture, PROFILES, swarmName, until } from './replicas.js';

const nats = natsFixture();
const replica = nats.replica.bind(nats);

const IDS = PROFILES.map((p) => p.id);


/** Every sequence a replica applies, in order, and each entry's id, recorded from `replication.applied`. */
function journal(r: ReplicatedSwarm): { seqs: number[]; ids: Set<string> } {
  const seqs: number[] = [];
  const ids = new Set<string>();
  r.on('replication.applied', (e: { seq: number; entry: LogEntry }) => {
    seqs.push(e.seq);
    ids.add(e.entry.id);
  });
  return { seqs, ids };
}

/** Each sequence once, in order, from `from` on: nothing lost, nothing applied twice. */
function expectContiguous(seqs: readonly number[], from: number, to: number): void {
  expect(seqs.length).toBe(to - from + 1);
  expect(seqs.every((s, i) => s === from + i)).toBe(true);
}

describe('replication faults', () => {
  it('three replicas proposing 1,000 random membership events concurrently end with the same plan, ids and status', async () => {
    const name = swarmName('thousand');
    const rs = [await replica(name), await replica(name), await replica(name)];
    const journals = rs.map(journal);
    const results = await Promise.all(rs.map((r, i) => proposeRandom(r, i === 0 ? 334 : 333, 100 + i, IDS, `r${i}`)));
    expect(results.flatMap((x) => x.failed)).toEqual([]);
    expect(results.reduce((n, x) => n + x.applied + x.refused, 0)).toBe(1000);
    const last = Math.max(...rs.map((r) => r.stats().applied));
    expect(last).toBe(1001); // the genesis and 1,000 events
    await converged(rs, last);
    const [a, b, c] = rs as [ReplicatedSwarm, ReplicatedSwarm, ReplicatedSwarm];
    expect(b.digest()).toBe(a.digest());
    expect(c.digest()).toBe(a.digest());
    expect(b.state().plan).toEqual(a.state().plan);
    expect(new Set(rs.map((r) => r.status())).size).toBe(1);
    for (const r of rs) expect(r.stats()).toMatchObject({ applied: 1001, entries: 1001 });
    for (const j of journals) expectContiguous(j.seqs, 2, 1001);
    // Refusals are decided by the log, so every replica counts the same.
    expect(new Set(rs.map((r) => r.stats().refused)).size).toBe(1);
  });

  it('a quiet replica whose JetStream cannot answer just after a restart asks again, and says connected with no new entry', async () => {
    const r = await replica(swarmName('quiet-restart'));
    // JetStream recovering its streams after a restart answers its API with errors for a while.
    const streams = r[kReplica].log.jsm.streams;
    const info = streams.info.bind(streams);
    let failures = 0;
    streams.info = async (stream) => {
      if (failures < 2) {
        failures++;
        throw new Error('JetStream system temporarily unavailable');
      }
      return info(stream);
    };
    await nats.server.restart();
    // Nothing is proposed: no log entry will come to say the replica is caught up.
    await until(() => failures === 2 && r.replication() === 'connected', 'the replica to ask twice more and say connected again');
    expect(r.stats().applied).toBe(1);
  });

  it('a replica that applied everything before the server went down says disconnected until it redialled: converging is not connecting', async () => {
    // The race the restart test used to lose: every entry applied, then the server goes. The
    // replica has converged, and is truthfully cut off until its client redials (every 250 ms).
    const r = await replica(swarmName('converged-then-cut'));
    await r.markDown('gpu');
    await r.markAlive('gpu');
    expect(r.stats().applied).toBe(3);
    await nats.server.stop();
    await until(() => r.replication() === 'disconnected', 'the replica to notice the server is gone');
    expect(r.stats().applied).toBe(3); // converged, and disconnected
    await nats.server.resume();
    await until(() => r.replication() === 'connected', 'the replica to redial and say connected');
    expect(r.stats()).toMatchObject({ applied: 3, entries: 3 });
  });

  it('survives the NATS server restarting mid-run: replicas reconnect and converge, no entry lost or applied twice', async () => {
    const name = swarmName('restart');
    const rs = [await replica(name, { proposeTimeoutMs: 20_000 }), await replica(name, { proposeTimeoutMs: 20_000 })];
    const journals = rs.map(journal);
    const seen = rs.map(() => new Set<ReplicationStatus>());
    const appliedAtCut = rs.map(() => -1);
    rs.forEach((r, i) =>
      r.on('replication.changed', (e: { status: ReplicationStatus; applied: number }) => {
        seen[i]?.add(e.status);
        if (e.status === 'disconnected' && appliedAtCut[i] === -1) appliedAtCut[i] = e.applied;
      }),
    );
    const first = await Promise.all(rs.map((r, i) => proposeRandom(r, 75, 200 + i, IDS, `s${i}`, 4)));
    // Mid-run for sure: the second half is proposed while the server is down, so every replica
    // applies it only after it redialled. (A restart that landed after the last entry let the
    // replicas converge while cut off, and the test read their true 'disconnected' as a flake.)
    await nats.server.stop();
    await until(() => rs.every((r) => r.replication() === 'disconnected'), 'both replicas to notice the server is gone');
    const running = rs.map((r, i) => proposeRandom(r, 75, 300 + i, IDS, `t${i}`, 4));
    await nats.server.resume();
    const results = [...first, ...(await Promise.all(running))];
    expect(results.flatMap((x) => x.failed)).toEqual([]);
    const last = Math.max(...rs.map((r) => r.stats().applied));
    await converged(rs, last);
    expect(rs[1]?.digest()).toBe(rs[0]?.digest());
    for (const i of [0, 1]) {
      expect(seen[i]).toContain('disconnected');
      expect(appliedAtCut[i]).toBeLessThan(last); // entries came after the cut
      // The last entry came after the reconnect, with nothing behind it: connected, no wait.
      expect(rs[i]?.replication()).toBe('connected');
      expectContiguous(journals[i]?.seqs ?? [], 2, last);
      expect(rs[i]?.stats()).toMatchObject({ applied: last, entries: last });
    }
    // Every call that resolved was applied once on both replicas; retried publishes were kept once.
    expect(last).toBe(1 + 300);
  });
});
