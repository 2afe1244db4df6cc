/**
 * The agent directory of `hecate-node serve --nats` against a real nats-server: what one
 * orchestrator puts, another sees (opened before or after), leaves go everywhere, swarms do not
 * mix, and every directory hears the swarm's heartbeat subject.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idToKey, keyToId, openAgentDirectory, type AgentDirectory, type DirectoryEntry } from '../../src/replication/agent-directory.js';
import { NatsServer } from './nats-server.js';

let server: NatsServer;
const opened: AgentDirectory[] = [];
beforeAll(async () => {
  server = await NatsServer.start();
});
afterAll(async () => {
  for (const d of opened) await d.close();
  await server.dispose();
});

const open = async (swarm: string) => {
  const seen = new Map<string, DirectoryEntry>();
  const heard: string[] = [];
  const directory = await openAgentDirectory({
    servers: [server.url],
    swarm,
    onChange: (id, entry) => {
      if (entry === undefined) seen.delete(id);
      else seen.set(id, entry);
    },
    onHeartbeat: (id) => heard.push(id),
  });
  opened.push(directory);
  return { directory, seen, heard };
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
    const b = await open('dir-test');
    await a.directory.put({ profile: { id: 'gpu:0', memoryGb: 6, score: 2 }, url: 'http://127.0.0.1:9001' });
    await a.directory.put({ profile: { id: 'n2', memoryGb: 4 }, url: 'http://127.0.0.1:9002' });
    await expect.poll(() => b.seen.size).toBe(2);
    expect(b.seen.get('gpu:0')).toEqual({ profile: { id: 'gpu:0', memoryGb: 6, score: 2 }, url: 'http://127.0.0.1:9001' });
    await b.directory.remove('n2');
    await expect.poll(() => a.seen.has('n2')).toBe(false);
    // Opened after the fact: it resolves holding what the bucket holds.
    const c = await open('dir-test');
    expect([...c.seen.keys()]).toEqual(['gpu:0']);
    // Another swarm's directory is another bucket.
    const other = await open('dir-other');
    expect(other.seen.size).toBe(0);
  });

  it('hears every heartbeat on its swarm\'s subject, and none of another swarm', async () => {
    const a = await open('dir-hb');
    const other = await open('dir-hb-other');
    const nc: NatsConnection = await connect({ servers: server.url });
    try {
      nc.publish('hecate.dir-hb.hb', 'gpu:0');
      nc.publish('hecate.dir-hb-other.hb', 'n9');
      nc.publish('hecate.dir-hb.hb', 'n2');
      await nc.flush();
      await expect.poll(() => a.heard).toEqual(['gpu:0', 'n2']);
      await expect.poll(() => other.heard).toEqual(['n9']);
    } finally {
      await nc.close();
    }
  });
});
