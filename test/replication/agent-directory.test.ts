/**
 * The agent directory of `hecate-node serve --nats` against a real nats-server: what one
 * orchestrator puts, another sees (opened before or after), leaves go everywhere, swarms do not
 * mix, and every directory hears the swarm's heartbeat subject.
 */
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { directoryBucket, idToKey, keyToId, openAgentDirectory, type AgentDirectory, type DirectoryEntry } from '../../src/replication/agent-directory.js';
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

const open = async (swarm: string, extra: { secret?: string; floor?: () => number } = {}) => {
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
    ...extra,
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

  it('with the secret, takes an orchestrator without it (unsigned entries, heartbeats as text) only while the log\'s floor is 1', async () => {
    const secret = 'd'.repeat(64);
    let floor = 1;
    const upgraded = await open('dir-up', { secret, floor: () => floor });
    const sealed = await open('dir-up', { secret, floor: () => 2 });
    const old = await open('dir-up'); // an orchestrator of the release before
    const nc: NatsConnection = await connect({ servers: server.url });
    try {
      await old.directory.put({ profile: { id: 'n1', memoryGb: 4 }, url: 'http://127.0.0.1:9001' });
      nc.publish('hecate.dir-up.hb', 'n1');
      await nc.flush();
      await expect.poll(() => upgraded.seen.get('n1')).toEqual({ profile: { id: 'n1', memoryGb: 4 }, url: 'http://127.0.0.1:9001' });
      await expect.poll(() => upgraded.heard).toEqual(['n1']);
      await expect.poll(() => sealed.directory.rejected()).toBe(2); // signed only: the entry and the heartbeat dropped
      expect(sealed.seen.has('n1')).toBe(false);
      floor = 2; // the log's first signed entry
      nc.publish('hecate.dir-up.hb', 'n1');
      await nc.flush();
      // The unsigned heartbeat is dropped, and so is the entry taken unsigned in the window.
      await expect.poll(() => upgraded.directory.rejected()).toBe(2);
      expect(upgraded.heard).toEqual(['n1']);
      expect(upgraded.seen.has('n1')).toBe(false);
      // What the upgraded one signs, the release before reads.
      await upgraded.directory.put({ profile: { id: 'n2', memoryGb: 4 }, url: 'http://127.0.0.1:9002' });
      await expect.poll(() => old.seen.get('n2')).toMatchObject({ profile: { id: 'n2', memoryGb: 4 }, url: 'http://127.0.0.1:9002' });
    } finally {
      await nc.close();
    }
  });

  it('with the secret, an entry taken unsigned in the window stays marked after a put with a bad signature for its id: dropped once the log is signed', async () => {
    let floor = 1;
    const upgraded = await open('dir-badsig', { secret: 'd'.repeat(64), floor: () => floor });
    const old = await open('dir-badsig'); // an orchestrator of the release before
    await old.directory.put({ profile: { id: 'a', memoryGb: 4 }, url: 'http://127.0.0.1:9001' });
    await expect.poll(() => upgraded.seen.has('a')).toBe(true);
    // Someone without the secret puts a forged signed entry for the same id: dropped, and the unsigned one stays marked.
    const forged = { profile: { id: 'a', memoryGb: 4 }, url: 'http://127.0.0.1:9009', at: Date.now(), sig: 'forged' };
    const nc: NatsConnection = await connect({ servers: server.url });
    try {
      await (await new Kvm(nc).open(directoryBucket('dir-badsig'))).put(idToKey('a'), JSON.stringify(forged));
      await expect.poll(() => upgraded.directory.rejected()).toBe(1);
      floor = 2; // the log's first signed entry
      nc.publish('hecate.dir-badsig.hb', 'x'); // looked at on each heartbeat
      await nc.flush();
      await expect.poll(() => upgraded.seen.has('a')).toBe(false);
    } finally {
      await nc.close();
    }
  });
});
