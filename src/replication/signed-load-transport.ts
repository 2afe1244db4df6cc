/**
 * The shared load signal under the swarm secret (docs/security.md, "NATS"): every announcement
 * on `hecate.<swarm>.load` is signed like the log's entries, with its signing time, and a replica
 * takes only announcements that verify and were signed within {@link ENTRY_SKEW_MS} of its own
 * clock. A plain client of the NATS server cannot make the replicas price reservations nobody
 * holds (a flood of fake load would steer every route away from a node); a copied announcement is
 * older than the one it copies, and the merge keeps each replica's newest. While the log's floor
 * is 1 (the upgrade window, docs/replication.md, "Upgrades"), announcements go unsigned and
 * unsigned ones are taken, so the replicas of the release before and the others share their load.
 */
import type { TimeSource } from '../runtime/types.js';
import type { LoadTransport } from './load-channel.js';
import { ENTRY_SKEW_MS } from './log-acceptance.js';
import type { LogSigner } from './log-signer.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * `inner` with announcements signed on the way out and checked on the way in; `rejected` counts what was dropped.
 * @param floor the log's floor (write-format.ts): below 2, announcements go and are taken unsigned
 */
export function signedLoadTransport(inner: LoadTransport, signer: LogSigner, wall: TimeSource, floor: () => number = () => 2): LoadTransport & { readonly rejected: () => number } {
  let rejected = 0;
  return {
    rejected: () => rejected,
    publish: (data) => {
      if (floor() < 2) return inner.publish(data);
      const value = JSON.parse(decoder.decode(data)) as Record<string, unknown>;
      inner.publish(encoder.encode(JSON.stringify(signer.signed('load', { ...value, at: wall.now() }))));
    },
    subscribe: (onData) =>
      inner.subscribe((data) => {
        let value: unknown;
        try {
          value = JSON.parse(decoder.decode(data));
        } catch {
          value = undefined;
        }
        if (floor() < 2 && value !== null && typeof value === 'object' && (value as { sig?: unknown }).sig === undefined) return onData(data);
        const at = (value as { at?: unknown } | undefined)?.at;
        if (value === null || typeof value !== 'object' || typeof at !== 'number' || Math.abs(wall.now() - at) > ENTRY_SKEW_MS || !signer.verify('load', value)) {
          rejected++;
          return;
        }
        const { sig: _sig, at: _at, ...announcement } = value as Record<string, unknown>;
        onData(encoder.encode(JSON.stringify(announcement)));
      }),
  };
}
