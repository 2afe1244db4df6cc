/**
 * A replica's key bindings across a rolling upgrade (docs/replication.md, "Upgrades: format
 * versions"), without NATS: while it writes version 1 a binding stays on the replica; once it
 * writes 2, its own bindings go on the log first (the log's table then answers), and binds and
 * unbinds go through the log.
 */
import { describe, expect, it } from 'vitest';
import { KeyBindingTable } from '../../src/replication/key-binding-table.js';
import { ReplicaKeyBindings } from '../../src/replication/replica-key-bindings.js';
import { ReplicationError } from '../../src/replication/replication-error.js';

function replica(signed = true, refuse = false) {
  const log = new KeyBindingTable();
  const proposed: [string, string | null][] = [];
  let format = 1;
  const bindings = new ReplicaKeyBindings({
    who: 'replica "r" of swarm "s"',
    signed,
    log,
    format: () => format,
    propose: async (nodeId, key) => {
      // The writers went back to version 1 after the caller looked at the format (the proposer refuses then).
      if (refuse) throw new ReplicationError('Refused', 'replica "r" of swarm "s" writes format version 1 now');
      proposed.push([nodeId, key]);
      return log.apply(nodeId, key); // as if applied from the log
    },
  });
  return { bindings, log, proposed, upgrade: () => (format = 2) };
}

describe('ReplicaKeyBindings', () => {
  it('binds on the replica while it writes version 1: the first key wins, an unbind frees it, nothing is proposed', async () => {
    const { bindings, proposed } = replica();
    expect(await bindings.bind('gpu', 'k1')).toEqual({ bound: true, key: 'k1' });
    expect(await bindings.bind('gpu', 'k2')).toEqual({ bound: false, key: 'k1' });
    expect(bindings.keyOf('gpu')).toBe('k1');
    expect(await bindings.unbind('gpu')).toEqual({ removed: true });
    expect(bindings.keyOf('gpu')).toBeUndefined();
    expect(proposed).toEqual([]);
  });

  it('puts its own bindings on the log once it writes version 2, the log deciding; a bind then goes through the log, its own first', async () => {
    const { bindings, log, proposed, upgrade } = replica();
    await bindings.bind('gpu', 'k1');
    await bindings.bind('desktop', 'k2');
    await bindings.bind('phone', 'k3');
    log.apply('desktop', 'other'); // another orchestrator's binding reached the log first
    bindings.flush(); // still version 1: nothing
    expect(proposed).toEqual([]);
    upgrade();
    expect(await bindings.bind('phone', 'k4')).toEqual({ bound: false, key: 'k3' }); // its own k3 went first
    expect(proposed).toEqual([
      ['phone', 'k3'],
      ['phone', 'k4'],
    ]);
    bindings.flush();
    await new Promise((r) => setTimeout(r, 0));
    expect(proposed.slice(2)).toEqual([
      ['desktop', 'k2'],
      ['gpu', 'k1'],
    ]);
    expect(bindings.keyOf('desktop')).toBe('other'); // lost on the log: the log's answers
    expect(bindings.keyOf('gpu')).toBe('k1');
    expect(await bindings.unbind('gpu')).toEqual({ removed: true });
    expect(proposed.at(-1)).toEqual(['gpu', null]);
    bindings.flush(); // nothing left of its own
    expect(proposed).toHaveLength(5);
  });

  it('refuses an empty id or key, and any binding without the swarm secret', async () => {
    await expect(replica().bindings.bind('', 'k')).rejects.toMatchObject({ code: 'InvalidInput', message: expect.stringMatching(/needs an agent id and a key/) });
    await expect(replica(false).bindings.bind('gpu', 'k')).rejects.toMatchObject({ code: 'InvalidInput', message: expect.stringMatching(/replica "r" of swarm "s" has no swarm secret/) });
  });

  it('binds and unbinds here when the proposal is refused (the writers went back to version 1 meanwhile): no Refused reaches the caller', async () => {
    const { bindings, proposed, upgrade } = replica(true, true);
    upgrade();
    expect(await bindings.bind('gpu', 'k1')).toEqual({ bound: true, key: 'k1' });
    expect(await bindings.bind('gpu', 'k2')).toEqual({ bound: false, key: 'k1' }); // its local k1 could not go first: it stays
    expect(bindings.keyOf('gpu')).toBe('k1');
    expect(await bindings.unbind('gpu')).toEqual({ removed: true });
    expect(bindings.keyOf('gpu')).toBeUndefined();
    expect(proposed).toEqual([]);
  });
});
