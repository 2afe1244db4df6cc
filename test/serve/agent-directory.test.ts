import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idToKey, keyToId, openAgentDirectory, type DirectoryEntry } from '../../src/serve/agent-directory.js';
import { NatsServer } from '../replication/nats-server.js';

let server: NatsServer;
const connections: NatsConnection[] = [];
beforeAll(async () => {
  server = await NatsServer.start();
});
afterAll(async () => {
  for (const nc of connections) await nc.close();
  await server.dispose();
});

const open = async (swarm: string) => {
  const nc = await connect({ servers: server.url });
  connections.push(nc);
  const seen = new Map<string, DirectoryEntry>();
  const directory = await openAgentDirectory(nc, swarm, (id, entry) => {
    if (entry === undefined) seen.delete(id);
    else seen.set(id, entry);
  });
  return { directory, seen };
};

describe('openAgentDirectory', () => {
  it('keys any agent id reversibly with characters a KV key allows', () => {
    for (const id of ['n1', 'gpu:0', 'a.b_c-d', '__proto__']) {
      expect(idToKey(id)).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(keyToId(idToKey(id))).toBe(id);
    }
  });

  it('shows an agent one orchestrator put to another, to one opened later, and its leave', async () => {
    const a = await open('dir-test');
    await a.directory.ready;
    const b = await open('dir-test');
    await b.directory.ready;
    await a.directory.put({ profile: { id: 'gpu:0', memoryGb: 6, score: 2 }, url: 'http://127.0.0.1:9001' });
    await a.directory.put({ profile: { id: 'n2', memoryGb: 4 }, url: 'http://127.0.0.1:9002' });
    await expect.poll(() => b.seen.size).toBe(2);
    expect(b.seen.get('gpu:0')).toEqual({ profile: { id: 'gpu:0', memoryGb: 6, score: 2 }, url: 'http://127.0.0.1:9001' });
    await b.directory.remove('n2');
    await expect.poll(() => a.seen.has('n2')).toBe(false);
    // Opened after the fact: ready only once it holds what the bucket holds.
    const c = await open('dir-test');
    await c.directory.ready;
    expect([...c.seen.keys()]).toEqual(['gpu:0']);
    // Another swarm's directory is another bucket.
    const other = await open('dir-other');
    await other.directory.ready;
    expect(other.seen.size).toBe(0);
    for (const d of [a, b, c, other]) d.directory.close();
  });
});
