/**
 * The checkpoint bucket on a real nats-server: a create of an existing key and an update at a
 * stale revision are refused (undefined), not thrown; a record is gone after the bucket's TTL.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { checkpointBucketName, openCheckpointBucket } from '../../src/replication/checkpoint-bucket.js';
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
});
