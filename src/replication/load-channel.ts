/**
 * Replicas share the load signal (docs/replication.md, "Shared load"): each announces its open
 * reservations per node on the core NATS subject `hecate.<swarm>.load` (not the durable log:
 * in-flight counts are news only now), and merges everyone else's into the in-flight load its
 * routing cost prices ({@link MergedInflight}). Announcements are coalesced: a change is
 * announced at once unless one went out within `announceMs`, then at the end of that window,
 * with the state as it is then. While a replica holds anything it announces again every
 * `holdMs / 4`, so the others keep counting it; silent for `holdMs`, it is no longer counted.
 *
 * Other signals can ride the same message as named parts ({@link LoadPart}), e.g. a prefix
 * index's inserts: each announcement takes what every part has pending.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { SharedInflight } from '../runtime/internal.js';
import type { Clock } from '../runtime/types.js';
import { decodeAnnouncement, encodeAnnouncement, type LoadAnnouncement } from './load-announcement.js';
import { MergedInflight } from './merged-inflight.js';

/** How announcements travel: publish bytes, hear everyone's (this replica's own included). */
export interface LoadTransport {
  publish(data: Uint8Array): void;
  /** Returns the unsubscribe. */
  subscribe(onData: (data: Uint8Array) => void): () => void;
}

/**
 * A signal that rides the load announcements: the hook for another replicated view (a prefix
 * index's inserts). `take` drains what is pending for the next announcement (undefined: nothing);
 * `receive` gets what another replica sent under this part's name. Call the channel's `changed()`
 * when something becomes pending.
 */
export interface LoadPart {
  readonly name: string;
  take(): unknown;
  receive(replica: string, value: unknown): void;
}

/** What a channel needs. */
export interface LoadChannelOptions {
  readonly replicaId: string;
  /** This incarnation's random name. */
  readonly epoch: string;
  readonly io: Clock;
  readonly transport: LoadTransport;
  /** The coalescing window, ms. @defaultValue 2 */
  readonly announceMs?: number;
  /** How long the others count an announcement without another, ms. @defaultValue 2000 */
  readonly holdMs?: number;
  /** Announces only while this says so (cut off, an announcement would be delivered late as if fresh). */
  connected(): boolean;
}

/** The core NATS transport on `hecate.<swarm>.load`. */
export function natsLoadTransport(nc: NatsConnection, swarm: string): LoadTransport {
  const subject = `hecate.${swarm}.load`;
  return {
    publish: (data) => nc.publish(subject, data),
    subscribe: (onData) => {
      const sub = nc.subscribe(subject, { callback: (err, msg) => (err === null ? onData(msg.data) : undefined) });
      return () => sub.unsubscribe();
    },
  };
}

/** One replica's end of the shared load signal. */
export class LoadChannel {
  /** The other replicas' reservations, merged. */
  readonly merged: MergedInflight;
  /** Announcements sent, merged, and dropped as unreadable. */
  readonly counts = { announced: 0, merged: 0, unreadable: 0 };
  private readonly announceMs: number;
  private readonly holdMs: number;
  private readonly parts = new Map<string, LoadPart>();
  private load: SharedInflight | undefined;
  private seq = 0;
  private lastAt = -Infinity;
  private pending = false;
  private flushTimer: unknown;
  private tickTimer: unknown;
  /** The last announcement counted something (so an empty state must still be said once). */
  private holding = false;
  private unsubscribe: (() => void) | undefined;
  private closed = false;

  constructor(private readonly options: LoadChannelOptions) {
    this.announceMs = options.announceMs ?? 2;
    this.holdMs = options.holdMs ?? 2000;
    this.merged = new MergedInflight(options.replicaId, () => options.io.now(), (nodeId, count) => this.load?.setRemote(nodeId, count));
  }

  /** Follows a local Swarm's in-flight counts (the latest one built) and feeds it the merged ones. */
  attach(load: SharedInflight): void {
    this.load?.onLocal(undefined);
    this.load = load;
    load.onLocal(() => this.changed());
    for (const [nodeId, count] of this.merged.entries()) load.setRemote(nodeId, count);
    this.changed();
  }

  /** A node joined the local Swarm: it counts what the others hold on it. */
  joined(nodeId: string): void {
    const count = this.merged.count(nodeId);
    if (count > 0) this.load?.setRemote(nodeId, count);
  }

  /** Adds a part to every announcement; returns its removal. */
  addPart(part: LoadPart): () => void {
    this.parts.set(part.name, part);
    return () => void (this.parts.get(part.name) === part && this.parts.delete(part.name));
  }

  /** Starts hearing the others and announcing. */
  start(): void {
    this.unsubscribe = this.options.transport.subscribe((data) => this.heard(data));
    const tick = () => {
      if (this.closed) return;
      this.merged.expire();
      if (this.holding) this.flush();
      this.tickTimer = this.options.io.setTimeout(tick, this.holdMs / 4);
    };
    this.tickTimer = this.options.io.setTimeout(tick, this.holdMs / 4);
  }

  /** Something to announce changed: announce now, or at the end of the coalescing window. */
  changed(): void {
    if (this.pending || this.closed) return;
    this.pending = true;
    const wait = this.lastAt + this.announceMs - this.options.io.now();
    if (wait <= 0) queueMicrotask(() => this.flush());
    else this.flushTimer = this.options.io.setTimeout(() => this.flush(), wait);
  }

  /** Says it holds nothing (the others forget it at once) and stops. */
  close(): void {
    if (this.closed) return;
    if (this.options.connected()) this.publish({}, 0, undefined);
    this.closed = true;
    this.options.io.clearTimeout(this.flushTimer as never);
    this.options.io.clearTimeout(this.tickTimer as never);
    this.unsubscribe?.();
    this.load?.onLocal(undefined);
  }

  private flush(): void {
    this.pending = false;
    if (this.closed || !this.options.connected()) return;
    const inflight: Record<string, number> = Object.create(null) as Record<string, number>; // node ids are data: "__proto__" too
    let any = false;
    for (const [nodeId, n] of this.load?.local() ?? []) {
      if (n <= 0) continue;
      inflight[nodeId] = n;
      any = true;
    }
    let parts: Record<string, unknown> | undefined;
    for (const part of this.parts.values()) {
      const value = part.take();
      if (value !== undefined) (parts ??= {})[part.name] = value;
    }
    if (!any && !this.holding && parts === undefined) return; // nothing new to say
    this.publish(inflight, this.holdMs, parts);
    this.holding = any;
  }

  private publish(inflight: Record<string, number>, holdMs: number, parts: Record<string, unknown> | undefined): void {
    const a: LoadAnnouncement = { v: 1, replica: this.options.replicaId, epoch: this.options.epoch, seq: ++this.seq, holdMs, inflight, ...(parts !== undefined ? { parts } : {}) };
    this.lastAt = this.options.io.now();
    this.counts.announced++;
    try {
      this.options.transport.publish(encodeAnnouncement(a));
    } catch {
      // A closed or draining connection: the keepalive says it again, or the others' hold ends.
    }
  }

  private heard(data: Uint8Array): void {
    if (this.closed) return;
    const a = decodeAnnouncement(data);
    if (a === undefined) {
      this.counts.unreadable++;
      return;
    }
    if (!this.merged.receive(a)) return;
    this.counts.merged++;
    if (a.parts !== undefined) for (const [name, value] of Object.entries(a.parts)) this.parts.get(name)?.receive(a.replica, value);
  }
}
