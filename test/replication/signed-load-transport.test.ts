/**
 * The shared load signal under the swarm secret (docs/replication.md, "Upgrades: format
 * versions"), without NATS: signed once the log is signed; during the upgrade window (the log's
 * floor 1) announcements go unsigned and unsigned ones are taken, so the replicas of the release
 * before share their load with the others.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/index.js';
import type { LoadTransport } from '../../src/replication/load-channel.js';
import { LogSigner } from '../../src/replication/log-signer.js';
import { signedLoadTransport } from '../../src/replication/signed-load-transport.js';

const T = 1_800_000_000_000;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A transport that hands every publish to every subscriber, and keeps what went out. */
function loopback(): LoadTransport & { readonly sent: string[]; deliver(text: string): void } {
  const handlers: ((data: Uint8Array) => void)[] = [];
  const sent: string[] = [];
  return {
    sent,
    publish: (data) => {
      sent.push(decoder.decode(data));
      for (const h of handlers) h(data);
    },
    subscribe: (onData) => {
      handlers.push(onData);
      return () => undefined;
    },
    deliver: (text) => handlers.forEach((h) => h(encoder.encode(text))),
  };
}

describe('signedLoadTransport', () => {
  it('sends and takes unsigned announcements while the floor is 1, and only signed ones once it is 2', () => {
    const inner = loopback();
    let floor = 1;
    const t = signedLoadTransport(inner, new LogSigner('s'.repeat(32), 'unit'), new ManualClock(T), () => floor);
    const got: string[] = [];
    t.subscribe((data) => got.push(decoder.decode(data)));
    const plain = JSON.stringify({ v: 1, replica: 'old', epoch: 'e', seq: 1, holdMs: 2000, inflight: { gpu: 1 } });
    t.publish(encoder.encode(plain));
    expect(inner.sent).toEqual([plain]); // as the release before sends it
    inner.deliver(plain); // the release before's, taken
    expect(got).toEqual([plain, plain]);
    floor = 2;
    inner.deliver(plain);
    expect(t.rejected()).toBe(1);
    t.publish(encoder.encode(plain));
    expect(JSON.parse(inner.sent[1] as string)).toMatchObject({ replica: 'old', at: T, sig: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(got).toEqual([plain, plain, plain]); // the signed one, checked and unwrapped
  });
});
