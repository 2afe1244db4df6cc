/**
 * A replica's proposals without NATS (docs/replication.md, "Upgrades: format versions"): a call
 * whose entry went out at version 1 after the log's first signed entry (skipped on every replica)
 * is proposed again under a new id at the format written now, and settles with that one.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/index.js';
import type { LogEntry } from '../../src/replication/log-entry.js';
import type { LogStream } from '../../src/replication/log-stream.js';
import { Proposer } from '../../src/replication/proposer.js';

describe('Proposer.again', () => {
  it('proposes a call again at the format written now, under a new id, and settles the call with it', async () => {
    const published: LogEntry[] = [];
    const log = { publish: async (_id: string, data: Uint8Array) => void published.push(JSON.parse(new TextDecoder().decode(data)) as LogEntry) } as unknown as LogStream;
    let format = 1;
    const p = new Proposer({ name: 'unit', replicaId: 'me', io: new ManualClock(), log, proposeTimeoutMs: 1000, closed: () => false, connected: () => true, format: () => format, seal: (e) => e }, 'c');
    const call = p.propose<string>({ type: 'node.down', nodeId: 'gpu', cause: 'manual' });
    await Promise.resolve();
    // `<replica>.<connection>.<n>.<random>`: no client of the NATS server can take the id first.
    const id = /^me\.c\.\d+\.[0-9a-z]{8}$/;
    expect(published).toEqual([{ v: 1, type: 'swarm.event', id: expect.stringMatching(id), event: { type: 'node.down', nodeId: 'gpu', cause: 'manual' } }]);
    const firstId = published[0]!.id;
    format = 2;
    p.again(firstId, undefined);
    await Promise.resolve();
    expect(published[1]).toEqual({ v: 2, type: 'swarm.event', id: expect.stringMatching(id), event: { type: 'node.down', nodeId: 'gpu', cause: 'manual' } });
    expect(published[1]!.id).not.toBe(firstId);
    p.settle(firstId, 'old', undefined); // the skipped one settles nothing any more
    p.settle(published[1]!.id, 'applied', undefined);
    await expect(call).resolves.toBe('applied');
    p.again('me.c.9', 'gpu'); // not pending: nothing proposed
    expect(published).toHaveLength(2);
  });

  it('refuses, clearly, an entry of a version above the one the writers write now (a key binding while they write 1), and writes nothing', async () => {
    const published: unknown[] = [];
    const log = { publish: async (_id: string, data: Uint8Array) => void published.push(JSON.parse(new TextDecoder().decode(data))) } as unknown as LogStream;
    const p = new Proposer({ name: 'unit', replicaId: 'me', io: new ManualClock(), log, proposeTimeoutMs: 1000, closed: () => false, connected: () => true, format: () => 1, seal: (e) => e }, 'c');
    await expect(p.proposeEntry((v, id) => ({ v, type: 'swarm.binding', id, nodeId: 'a', key: 'k' }), 2)).rejects.toMatchObject({ code: 'Refused', message: expect.stringMatching(/writes format version 1 now .* version 2 at least/) });
    expect(published).toEqual([]);
  });
});
