/**
 * Admission in `GET /metrics` (docs/serve.md, "Metrics"), what an autoscaler acts on: the swarm's
 * saturation and capacity, the admission queue's depth per band, each class's generations under
 * way (read at scrape time from the swarm and the route), how long admitted generations waited,
 * and the refusals by reason.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** The parts of `swarm.saturation()` (docs/admission.md) the metrics read. */
export interface SaturationView {
  readonly saturation: number;
  readonly saturated: boolean;
  readonly capacity: number | null;
  readonly queued: number;
  readonly bands: readonly { readonly priority: number; readonly queued: number }[];
}

/** What the admission gauges read when scraped. */
export interface AdmissionSource {
  /** The seated swarm's saturation; undefined before a swarm is planned. */
  saturation?(): SaturationView | undefined;
  /** Generations under way per client class (`--classes`). */
  classInFlight?(): ReadonlyMap<string, number>;
}

/** The admission metrics, registered on the orchestrator's registry. */
export class AdmissionMetrics {
  /** Seconds an admitted generation waited for a slot, by class (`default` without `--classes`). */
  readonly waitSeconds: Histogram<'class'>;
  /** Generations refused or given up before they ran, by reason. */
  readonly rejections: Counter<'reason'>;

  constructor(registry: Registry, source: AdmissionSource) {
    this.waitSeconds = new Histogram({ name: 'hecate_admission_wait_seconds', help: 'Time an admitted generation waited in the admission queue for a slot, by client class.', labelNames: ['class'] as const, buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers: [registry] });
    this.rejections = new Counter({ name: 'hecate_admission_rejections_total', help: 'Generations refused before they ran, by reason: Saturated (429: queue full, or sheddable while saturated), DeadlineExceeded (504: no slot in time), RateLimited (429: the class at its maxInFlight), Draining (503: shutting down), Cancelled (the client left while it waited).', labelNames: ['reason'] as const, registers: [registry] });
    const read = (): SaturationView | undefined => source.saturation?.();
    new Gauge({
      name: 'hecate_saturation',
      help: 'How full the swarm is, 0 to 1: the least saturated intact copy (docs/admission.md); 1 with no intact copy.',
      registers: [registry],
      collect() {
        this.reset();
        const s = read();
        if (s !== undefined) this.set(s.saturation);
      },
    });
    new Gauge({
      name: 'hecate_saturated',
      help: '1 when no intact copy has room (admit queues, sheds priority < 0), else 0.',
      registers: [registry],
      collect() {
        this.reset();
        const s = read();
        if (s !== undefined) this.set(s.saturated ? 1 : 0);
      },
    });
    new Gauge({
      name: 'hecate_capacity',
      help: 'Requests the intact copies hold at once (Σ of their slot capacity); absent when a copy is unlimited.',
      registers: [registry],
      collect() {
        this.reset();
        const c = read()?.capacity;
        if (typeof c === 'number') this.set(c);
      },
    });
    new Gauge({
      name: 'hecate_admission_queue_depth',
      help: 'Generations waiting for admission, per priority band.',
      labelNames: ['band'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const b of read()?.bands ?? []) this.set({ band: String(b.priority) }, b.queued);
      },
    });
    new Gauge({
      name: 'hecate_class_inflight',
      help: 'Generations under way (waiting for admission or running) per client class.',
      labelNames: ['class'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const [name, n] of source.classInFlight?.() ?? []) this.set({ class: name }, n);
      },
    });
  }
}
