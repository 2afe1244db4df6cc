/**
 * Entry ids are unguessable (docs/replication.md, "Duplicates"), against a real nats-server: the
 * id is the publish's `Nats-Msg-Id`, so a client of the NATS server that published garbage first
 * under a replica's next id would have the stream drop the real entry as a duplicate, and the call
 * would never settle.
 */
import { describe, expect, it } from 'vitest';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { natsFixture, swarmName } from './replicas.js';

const nats = natsFixture();

describe('an entry id', () => {
  it('cannot be taken first by a client of the NATS server: the next call settles', async () => {
    const nc = await connect({ servers: nats.server.url });
    try {
      const name = swarmName('squat');
      const stream = `HECATE_${name}`;
      const w = await nats.replica(name, { replicaId: 'w', secret: 's'.repeat(64), snapshotEvery: 0 });
      const jsm = await jetstreamManager(nc);
      const lastId = async () => {
        const { state } = await jsm.streams.info(stream);
        return (JSON.parse(new TextDecoder().decode((await jsm.streams.getMessage(stream, { seq: state.last_seq }))!.data)) as { id: string }).id;
      };
      await w.markDown('gpu');
      const first = await lastId();
      // What a squatter would take: the same id with the counter one up (and the same end, if any).
      const m = /^(w\.[^.]+\.)(\d+)(\..*)?$/.exec(first);
      expect(m, first).not.toBeNull();
      const guess = `${m![1]}${Number(m![2]) + 1}${m![3] ?? ''}`;
      await jetstream(nc).publish(`hecate.${name}.log`, 'garbage', { msgID: guess });
      const call = w.markAlive('gpu').then(
        () => 'settled',
        (e: { code?: string }) => `rejected ${String(e.code)}`,
      );
      const outcome = await Promise.race([call, new Promise((r) => setTimeout(() => r('pending after 3 s'), 3000))]);
      expect(outcome).toBe('settled');
      expect(w.node('gpu')?.state).toBe('alive');
      expect(await lastId()).not.toBe(guess);
    } finally {
      await nc.close();
    }
  });
});
