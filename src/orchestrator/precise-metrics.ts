/**
 * Precise mode on `/metrics` (docs/prefix-cache.md, "Precise mode"): which copies their engines'
 * reports feed, and the sequence gaps healed by a snapshot, read from the swarm's feeds when
 * scraped (a new swarm's feeds start from zero).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { PreciseStats } from '../prefix/precise-feeds.js';

/** Registers the gauge and the counters on `registry`, reading `stats` at each scrape. */
export function registerPreciseMetrics(registry: Registry, stats: () => PreciseStats | undefined): void {
  new Gauge({
    name: 'hecate_prefix_copy_precise',
    help: 'Per copy: 1 when its first stage engine reports its KV blocks and the index is fed by them (precise), 0 when estimated.',
    labelNames: ['copy'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const s = stats();
      for (const copy of s?.precise ?? []) this.set({ copy }, 1);
      for (const copy of s?.estimated ?? []) this.set({ copy }, 0);
    },
  });
  new Gauge({
    name: 'hecate_prefix_precise_blocks',
    help: 'KV blocks the precise copies hold, as their engines reported them.',
    registers: [registry],
    collect() {
      this.set(stats()?.blocks ?? 0);
    },
  });
  const counter = (name: string, help: string, read: (s: PreciseStats) => number): void => {
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        const s = stats();
        if (s !== undefined) this.inc(read(s));
      },
    });
  };
  counter('hecate_prefix_gaps_healed_total', 'Gaps in an engine KV event sequence healed by a snapshot of its blocks.', (s) => s.gapsHealed);
  counter('hecate_prefix_kv_gaps_total', 'Gaps seen in an engine KV event sequence (its copies estimated until a snapshot).', (s) => s.gaps);
  counter('hecate_prefix_kv_restarts_total', 'Engines heard with a new epoch (restarted: their copies wiped until a snapshot).', (s) => s.restarts);
}
