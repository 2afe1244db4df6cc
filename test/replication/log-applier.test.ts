/**
 * A replica's side of the log without NATS (docs/replication.md): entries in stream order; a gap
 * (the log trimmed past it) and an entry of an unknown format version stop it, a bad entry is
 * skipped alike everywhere.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/index.js';
import { LogApplier, type ApplierHost } from '../../src/replication/log-applier.js';
import { LogAcceptance } from '../../src/replication/log-acceptance.js';
import { encodeEntry } from '../../src/replication/log-entry.js';
import { LogSigner } from '../../src/replication/log-signer.js';
import type { SnapshotStore, StoredSnapshot } from '../../src/replication/snapshot-store.js';
import { persistSwarm } from '../../src/persistence/persist-swarm.js';
import type { Swarm } from '../../src/runtime/swarm.js';
import { CONFIG, PROFILES } from './replicas.js';

/** A host that does nothing, with `extra` over it. */
function unitHost(extra: Partial<ApplierHost> = {}): ApplierHost {
  return {
    name: 'unit',
    swarmOptions: { clock: new ManualClock() },
    built: () => undefined,
    settle: () => undefined,
    own: () => false,
    stale: () => undefined,
    advanced: () => undefined,
    boundary: () => undefined,
    format: () => 1,
    emit: () => undefined,
    ...extra,
  };
}

function applier(): LogApplier {
  const host = unitHost();
  const a = new LogApplier(host);
  a.receive(1, encodeEntry({ v: 1, type: 'swarm.genesis', id: 'genesis', profiles: PROFILES, config: CONFIG, seed: 1 }), 0);
  a.receive(2, encodeEntry({ v: 1, type: 'swarm.event', id: 'x.y.1', event: { type: 'node.down', nodeId: 'gpu', cause: 'manual' } }), 3);
  return a;
}

describe('LogApplier', () => {
  it('applies a quarantine (node.down, cause integrity) as every replica would', () => {
    const a = applier();
    a.receive(3, encodeEntry({ v: 1, type: 'swarm.event', id: 'x.y.2', event: { type: 'node.alive', nodeId: 'gpu' } }), 0);
    a.receive(4, encodeEntry({ v: 1, type: 'swarm.event', id: 'x.y.3', event: { type: 'node.down', nodeId: 'gpu', cause: 'integrity' } }), 0);
    expect(a.swarm?.node('gpu')).toMatchObject({ state: 'down', cause: 'integrity' });
    a.swarm?.stop();
  });

  it('stops at a gap: the entries it needs were trimmed while it was unheard', () => {
    const a = applier();
    expect(a.stats()).toMatchObject({ applied: 2, lag: 3 });
    expect(() => a.receive(5, encodeEntry({ v: 1, type: 'swarm.event', id: 'x.y.2', event: { type: 'node.alive', nodeId: 'gpu' } }), 0)).toThrow(
      expect.objectContaining({ name: 'ReplicationError', code: 'Trimmed', message: expect.stringMatching(/applied up to 2, but the log now starts at 5/) }),
    );
    expect(a.stats().applied).toBe(2);
    a.swarm?.stop();
  });

  it('stops at an entry of a format version it does not read, and skips bytes no replica writes', () => {
    const a = applier();
    a.receive(3, new TextEncoder().encode('not json'), 0);
    expect(a.stats()).toMatchObject({ applied: 3, refused: 1 });
    expect(() => a.receive(4, new TextEncoder().encode(JSON.stringify({ v: 2, type: 'swarm.event', id: 'x.y.3', event: { type: 'node.alive', nodeId: 'gpu' } })), 0)).toThrow(
      expect.objectContaining({ code: 'UnknownVersion', message: expect.stringMatching(/log entry 4 is format version 2; this replica reads version 1/) }),
    );
    expect(a.stats().applied).toBe(3);
    expect(a.swarm?.node('gpu')?.state).toBe('down');
    a.swarm?.stop();
  });

  it('says when an own unsigned entry came after the log\'s first signed one (skipped alike everywhere), so it is proposed again', () => {
    const signer = new LogSigner('s'.repeat(32), 'unit');
    const outdated: [string, string | undefined][] = [];
    const a = new LogApplier({
      name: 'unit',
      swarmOptions: { clock: new ManualClock() },
      built: () => undefined,
      settle: () => undefined,
      own: (id) => id.startsWith('me.'),
      stale: () => undefined,
      outdated: (id, nodeId) => outdated.push([id, nodeId]),
      advanced: () => undefined,
      boundary: () => undefined,
      format: () => 1,
      reads: [1, 2],
      acceptance: new LogAcceptance(signer),
      emit: () => undefined,
    });
    const T = 1_800_000_000_000;
    const unsigned = (id: string, basis?: number) => encodeEntry({ v: 1, type: 'swarm.event', id, event: { type: 'node.down', nodeId: 'gpu', cause: 'manual' }, ...(basis !== undefined ? { basis } : {}) });
    a.receive(1, encodeEntry({ v: 1, type: 'swarm.genesis', id: 'genesis', profiles: PROFILES, config: CONFIG, seed: 1 }), 0, T);
    a.receive(2, unsigned('me.c.1'), 0, T); // the upgrade window: applied
    expect(a.floor).toBe(1);
    expect(a.swarm?.node('gpu')?.state).toBe('down');
    a.receive(3, encodeEntry(signer.signed('entry', { v: 2, type: 'swarm.event', id: 'other.c.1', event: { type: 'node.alive', nodeId: 'gpu', cause: 'manual' }, at: T })), 0, T);
    expect(a.floor).toBe(2);
    a.receive(4, unsigned('me.c.2'), 0, T);
    a.receive(5, unsigned('other.c.2'), 0, T);
    a.receive(6, unsigned('me.c.3', 3), 0, T);
    expect(outdated).toEqual([
      ['me.c.2', undefined],
      ['me.c.3', 'gpu'],
    ]);
    expect(a.stats()).toMatchObject({ applied: 6, rejected: 3 });
    expect(a.swarm?.node('gpu')?.state).toBe('alive');
    a.swarm?.stop();
  });

  it('applies hostile version-1 entries (any sig or at) in the upgrade window exactly as a replica without the secret does, and refuses every one after the seal', () => {
    const signer = new LogSigner('s'.repeat(32), 'unit');
    const T = 1_800_000_000_000;
    const host = (acceptance?: LogAcceptance): ApplierHost => unitHost(acceptance !== undefined ? { acceptance, reads: [1, 2] } : {});
    const withSecret = new LogApplier(host(new LogAcceptance(signer)));
    const without = new LogApplier(host());
    const down = (nodeId: string) => ({ type: 'node.down', nodeId, cause: 'manual' }) as const;
    const hostile: unknown[] = [
      { v: 1, type: 'swarm.genesis', id: 'genesis', profiles: PROFILES, config: CONFIG, seed: 1 },
      { v: 1, type: 'swarm.event', id: 'evil.1', event: down('gpu'), sig: 'x' },
      { v: 1, type: 'swarm.event', id: 'evil.2', event: down('phone'), sig: null },
      { v: 1, type: 'swarm.event', id: 'evil.3', event: down('laptop'), sig: '0'.repeat(64), at: T },
      { v: 1, type: 'swarm.event', id: 'evil.4', event: down('desktop'), at: 'soon' },
      // Even one a secret holder signed (no writer signs version 1) is taken as the release before takes it.
      signer.signed('entry', { v: 1, type: 'swarm.event', id: 'evil.5', event: { type: 'node.alive', nodeId: 'gpu' }, at: T - 3_600_000 }),
      { v: 1, type: 'swarm.event', id: 'evil.6', event: { type: 'node.alive', nodeId: 'phone' } },
    ];
    hostile.forEach((value, i) => {
      const data = new TextEncoder().encode(JSON.stringify(value));
      withSecret.receive(i + 1, data, 0, T);
      without.receive(i + 1, data, 0, T);
    });
    const digest = (a: LogApplier) => JSON.stringify(persistSwarm(a.swarm as Swarm));
    expect(digest(withSecret)).toBe(digest(without));
    expect(withSecret.stats()).toMatchObject({ applied: 7, entries: 7, rejected: 0, floor: 1 });
    expect(withSecret.swarm?.node('laptop')?.state).toBe('down');
    expect(withSecret.swarm?.node('gpu')?.state).toBe('alive');
    // The seal: a signed version-2 entry; from then on no version-1 entry is applied, signed or not.
    withSecret.receive(8, encodeEntry(signer.signed('entry', { v: 2, type: 'swarm.event', id: 'r.c.1', event: { type: 'node.alive', nodeId: 'laptop' }, at: T })), 0, T);
    expect(withSecret.floor).toBe(2);
    withSecret.receive(9, encodeEntry(signer.signed('entry', { v: 1, type: 'swarm.event', id: 'evil.7', event: down('laptop'), at: T })), 0, T);
    withSecret.receive(10, new TextEncoder().encode(JSON.stringify({ v: 1, type: 'swarm.event', id: 'evil.8', event: down('laptop'), sig: 'x' })), 0, T);
    expect(withSecret.stats()).toMatchObject({ applied: 10, rejected: 2 });
    expect(withSecret.swarm?.node('laptop')?.state).toBe('alive');
    withSecret.swarm?.stop();
    without.swarm?.stop();
  });

  it('with the secret, is at floor 2 from the connect when the stream\'s last entry is signed, while it catches up on an unsigned prefix', () => {
    const signer = new LogSigner('s'.repeat(32), 'unit');
    const T = 1_800_000_000_000;
    const make = () =>
      new LogApplier({ name: 'unit', swarmOptions: { clock: new ManualClock() }, built: () => undefined, settle: () => undefined, own: () => false, stale: () => undefined, advanced: () => undefined, boundary: () => undefined, format: () => 1, reads: [1, 2], acceptance: new LogAcceptance(signer), emit: () => undefined });
    const signedEntry = signer.signed('entry', { v: 2, type: 'swarm.event' as const, id: 'r.c.1.x', event: { type: 'node.alive' as const, nodeId: 'gpu' }, at: T });
    const a = make();
    a.tail(encodeEntry(signedEntry));
    expect(a.floor).toBe(2); // before any entry is applied: unsigned heartbeats and announcements are not taken
    a.receive(1, encodeEntry({ v: 1, type: 'swarm.genesis', id: 'genesis', profiles: PROFILES, config: CONFIG, seed: 1 }), 1, T);
    expect(a.floor).toBe(2);
    a.swarm?.stop();
    // An unsigned last entry, a forged version 2 one, or bytes that are not JSON say nothing.
    for (const last of [encodeEntry({ v: 1, type: 'swarm.event', id: 'x', event: { type: 'node.alive', nodeId: 'gpu' } }), encodeEntry({ ...signedEntry, id: 'forged' }), new TextEncoder().encode('not json')]) {
      const b = make();
      b.tail(last);
      expect(b.floor).toBe(1);
    }
  });

  it('keeps the floor in the snapshot: a replica started from one of a signed log is at 2 and skips version-1 entries', async () => {
    const signer = new LogSigner('s'.repeat(32), 'unit');
    const T = 1_800_000_000_000;
    const make = () =>
      new LogApplier({ name: 'unit', swarmOptions: { clock: new ManualClock() }, built: () => undefined, settle: () => undefined, own: () => false, stale: () => undefined, advanced: () => undefined, boundary: () => undefined, format: () => 2, reads: [1, 2], acceptance: new LogAcceptance(signer), emit: () => undefined });
    const saved: StoredSnapshot[] = [];
    const a = make();
    a.saveTo({ save: async (snapshot: StoredSnapshot) => (saved.push(snapshot), true) } as unknown as SnapshotStore, 3);
    const genesis = { v: 1, type: 'swarm.genesis', id: 'genesis', profiles: PROFILES, config: CONFIG, seed: 1 } as const;
    a.receive(1, encodeEntry(genesis), 2, T);
    a.receive(2, encodeEntry({ v: 1, type: 'swarm.event', id: 'old.1', event: { type: 'node.down', nodeId: 'gpu', cause: 'manual' } }), 1, T);
    a.receive(3, encodeEntry(signer.signed('entry', { v: 2, type: 'swarm.event', id: 'r.c.1.x', event: { type: 'node.alive', nodeId: 'gpu' }, at: T })), 0, T);
    a.swarm?.stop();
    expect(saved).toHaveLength(1);
    expect(saved[0]).toMatchObject({ v: 2, seq: 3, acceptance: { sealed: true } });
    // A snapshot written before the rename names the same state `admission`: it is read as well.
    const { acceptance, ...rest } = saved[0]!;
    for (const snapshot of [saved[0]!, { ...rest, admission: acceptance }]) {
      const b = make();
      b.restore(genesis, snapshot);
      expect(b.floor).toBe(2);
      b.receive(4, encodeEntry({ v: 1, type: 'swarm.event', id: 'old.2', event: { type: 'node.down', nodeId: 'gpu', cause: 'manual' } }), 0, T);
      expect(b.stats()).toMatchObject({ applied: 4, rejected: 1 });
      expect(b.swarm?.node('gpu')?.state).toBe('alive');
      b.swarm?.stop();
    }
  });
});
