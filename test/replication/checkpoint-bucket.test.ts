/**
 * The checkpoint bucket on a real nats-server: a create of an existing key and an update at a
 * stale revision are refused (undefined), not thrown; a record is gone after the bucket's TTL;
 * with the swarm secret, a record a plain NATS client wrote is never read and the next claim
 * replaces it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { checkpointBucketName, openCheckpointBucket } from '../../src/replication/checkpoint-bucket.js';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { NatsServer } from './nats-server.js';

let nats: NatsServer | undefined;
afterAll(async () => {
  await nats?.dispose();
});

describe('openCheckpointBucket', () => {
  it('compares and sets by revision, and drops a record after its TTL', async () => {
    nats = await NatsServer.start();
    const a = await openCheckpointBucket({ servers: [nats.url], swarm: 'cp', ttlMs: 1000 });
    const b = await openCheckpointBucket({ servers: [nats.url], swarm: 'cp', ttlMs: 1000 });
    try {
      expect(checkpointBucketName('cp')).toBe('hecate-cp-generate');
      const first = await a.create('key:1', '{"n":1}');
      expect(first).toBeGreaterThan(0);
      expect(await b.create('key:1', '{"n":2}')).toBeUndefined();
      expect(await b.get('key:1')).toEqual({ value: '{"n":1}', revision: first });
      const second = await b.update('key:1', '{"n":3}', first as number);
      expect(second).toBeGreaterThan(first as number);
      expect(await a.update('key:1', '{"n":4}', first as number)).toBeUndefined(); // a stale writer
      expect((await a.get('key:1'))?.value).toBe('{"n":3}');
      expect(await a.get('never')).toBeUndefined();
      for (let i = 0; i < 100 && (await a.get('key:1')) !== undefined; i++) await new Promise((r) => setTimeout(r, 100)); // the server expires it past its max age
      expect(await a.get('key:1')).toBeUndefined();
      expect(await b.create('key:1', '{"n":5}')).toBeGreaterThan(0); // the key is new again
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('with the swarm secret, reads only signed records: a forged or moved record is absent and a create replaces it', async () => {
    nats ??= await NatsServer.start();
    const secret = new TextEncoder().encode('the-swarm-secret');
    const a = await openCheckpointBucket({ servers: [nats.url], swarm: 'signed', ttlMs: 60_000, secret });
    const nc = await connect({ servers: nats.url });
    try {
      const raw = await new Kvm(nc).open(checkpointBucketName('signed'));
      const at = (k: string) => Buffer.from(k, 'utf8').toString('base64url');
      await raw.put(at('forged'), '{"v":1,"state":"done","result":{"digest":"pwned"}}');
      expect(await a.get('forged')).toBeUndefined();
      const created = await a.create('forged', '{"n":1}');
      expect(created).toBeGreaterThan(0);
      expect(await a.get('forged')).toEqual({ value: '{"n":1}', revision: created });
      const honest = (await raw.get(at('forged')))?.string() as string; // signed for key "forged"
      await raw.put(at('moved'), honest);
      expect(await a.get('moved')).toBeUndefined();
      const wrongSecret = await openCheckpointBucket({ servers: [nats.url], swarm: 'signed', ttlMs: 60_000, secret: new TextEncoder().encode('another') });
      try {
        expect(await wrongSecret.get('forged')).toBeUndefined();
      } finally {
        await wrongSecret.close();
      }
    } finally {
      await a.close();
      await nc.close();
    }
  });
});
