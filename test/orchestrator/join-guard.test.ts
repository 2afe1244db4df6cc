/** The join guard's buckets (docs/security.md, "Joins"): new ids per source network and per agent key. */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/runtime/clock.js';
import { JoinGuard, sourceNetwork } from '../../src/orchestrator/join-guard.js';

const guard = () => new JoinGuard({ maxNodes: 1000, burst: 3, refillMs: 1000 }, new ManualClock(0));
const admitted = (g: JoinGuard, joins: [string, string | undefined][]): number => {
  let n = 0;
  for (const [i, [source, key]] of joins.entries()) {
    try {
      g.admitNew(`id-${i}`, source, 0, key);
      n++;
    } catch (error) {
      expect((error as { code?: string }).code).toBe('RateLimited');
    }
  }
  return n;
};

describe('sourceNetwork', () => {
  it('counts an IPv4 /24, all of loopback (both families) and an IPv6 /64 as one source', () => {
    expect(sourceNetwork('10.1.2.3')).toBe('10.1.2.0/24');
    expect(sourceNetwork('::ffff:10.1.2.200')).toBe('10.1.2.0/24');
    expect(sourceNetwork('127.9.8.7')).toBe('127.0.0.0/8');
    expect(sourceNetwork('::1')).toBe('127.0.0.0/8');
    expect(sourceNetwork('2001:db8:0:1::5')).toBe('2001:db8:0:1::/64');
    expect(sourceNetwork('2001:db8:0:1:ffff::9')).toBe('2001:db8:0:1::/64');
    expect(sourceNetwork('2001:db8:0:2::5')).not.toBe(sourceNetwork('2001:db8:0:1::5'));
  });
});

describe('JoinGuard', () => {
  it('limits new ids from many addresses of one network together', () => {
    expect(admitted(guard(), ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4', '10.0.0.5'].map((s) => [s, undefined]))).toBe(3);
  });

  it('limits new ids signed by one key across networks, and spends nothing of a network when the key refuses', () => {
    const g = guard();
    expect(admitted(g, ['10.0.1.1', '10.0.2.1', '10.0.3.1', '10.0.4.1'].map((s) => [s, 'k1']))).toBe(3);
    // 10.0.4.0/24 was not charged for the refused join: three new keys still join from it.
    expect(admitted(g, [['10.0.4.1', 'k2'], ['10.0.4.2', 'k3'], ['10.0.4.3', 'k4'], ['10.0.4.4', 'k5']])).toBe(3);
    expect(() => g.refuseIfExhausted('x', '10.0.9.9', 'k1')).toThrow(/agent key k1/);
  });
});
