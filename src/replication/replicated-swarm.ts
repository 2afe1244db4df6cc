import { DeliverPolicy, jetstream, jetstreamManager, StorageType, type ConsumerMessages, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { OwnMark, SwarmEmitted } from '../../machines/swarm-context.js';
import type { NodeProfile, NodeTelemetry, Route } from '../core/types.js';
import type { SwarmState } from '../core/state.js';
import { SwarmError } from '../core/errors.js';
import { systemClock } from '../runtime/clock.js';
import type { Session } from '../sessions/session.js';
import { executeOnce, openSession } from '../sessions/session-swarm.js';
import { applyEvent, persistSwarm, restoreSwarm, swarmDigest } from '../persistence/persist-swarm.js';
import { Swarm as LocalSwarm } from '../runtime/swarm.js';
import { plainProfile } from '../runtime/plain.js';
import type { SessionOptions, StageRunner } from '../sessions/session-types.js';
import type { Swarm } from '../runtime/swarm.js';
import type {
  Clock,
  Growth,
  Lease,
  LeasedRoute,
  ReleaseOutcome,
  Rescue,
  Retirement,
  Revival,
  RouteOptions,
  SwarmConfig,
  SwarmOptions,
  SwarmRequest,
  SwarmStatus,
  TelemetrySample,
} from '../runtime/types.js';
import { decodeEntry, encodeEntry, eventNode, type LogEntry } from './log-entry.js';
import type { LifecycleEvent, PersistedSwarm } from '../persistence/persisted.js';
import { SnapshotStore, type StoredSnapshot } from './snapshot-store.js';
import { ReplicationError } from './replication-error.js';

/**
 * Where a replica stands with the log: `catching-up` (applying what the stream holds beyond its
 * last applied sequence; it serves on its last view meanwhile, except at start), `connected`
 * (caught up, applying as entries come), `disconnected` (cut off from NATS: routing on its last
 * view, proposals wait or fail), `closed`.
 */
export type ReplicationStatus = 'catching-up' | 'connected' | 'disconnected' | 'closed';

/** What a replicated swarm emits besides the Swarm's own events. */
export type ReplicationEmitted =
  | { readonly type: 'replication.changed'; readonly status: ReplicationStatus; readonly applied: number }
  /** One log entry applied (or found a no-op, or refused: `error`), in stream order. */
  | { readonly type: 'replication.applied'; readonly seq: number; readonly entry: LogEntry; readonly error?: Error };

/** Counters of a replica, for tests and dashboards. */
export interface ReplicationStats {
  /** The last stream sequence applied (0 before the genesis). */
  readonly applied: number;
  /** The log sequence of the KV snapshot this replica started from; 0 when it replayed the whole log. */
  readonly snapshot: number;
  /** Entries applied after the snapshot (each stream sequence once: `snapshot + entries === applied` when none was lost). */
  readonly entries: number;
  /** Messages delivered again for a sequence already applied (after a reconnect), and skipped. */
  readonly redelivered: number;
  /** Own marks (detector, ejection, self-revival) dropped as stale: another entry on the node came first. */
  readonly staleMarks: number;
  /** Entries that were refused when applied (e.g. a duplicate node), on every replica alike. */
  readonly refused: number;
}

/** Options of {@link connectSwarm}. */
export interface ConnectSwarmOptions {
  /** NATS server URL(s), e.g. `nats://127.0.0.1:4222`. */
  readonly servers: string | readonly string[];
  /** The swarm's name (letters, digits, `-`, `_`): its stream is `HECATE_<name>`, its subjects `hecate.<name>.*`. */
  readonly swarm: string;
  /**
   * The genesis, used only when the swarm's log is new: the profiles, config and id seed every
   * replica builds from. A log that has one already wins. Without them a replica waits for
   * another to write the genesis (up to `connectTimeoutMs`).
   */
  readonly profiles?: readonly NodeProfile[];
  readonly config?: SwarmConfig;
  /** @defaultValue 1 */
  readonly seed?: number;
  /** The local Swarm's clock (detector, leases, bans). @defaultValue systemClock */
  readonly clock?: Clock;
  /** An XState inspection observer for the local Swarm. */
  readonly inspect?: SwarmOptions['inspect'];
  /** This replica's name in proposal ids. @defaultValue a random one */
  readonly replicaId?: string;
  /** How long a lifecycle call keeps trying to put its proposal on the log before `Disconnected`. @defaultValue 10000 */
  readonly proposeTimeoutMs?: number;
  /** How long connecting may wait for the server, the genesis and catching up. @defaultValue 30000 */
  readonly connectTimeoutMs?: number;
  /** After a reconnect, how long heartbeats have to come back before this replica re-proposes its detector's downs. @defaultValue 3000 */
  readonly reconcileAfterMs?: number;
  /** The clock of network waits (retries, timeouts, reconciling). @defaultValue systemClock */
  readonly ioClock?: Clock;
  /**
   * Saves the swarm's snapshot in the KV bucket `hecate_<name>` after every this many log
   * entries, and starts from the stored one (replaying only the entries after it); 0: neither,
   * a replica always replays the whole log. @defaultValue 500
   */
  readonly snapshotEvery?: number;
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Connects a replica of a replicated swarm (docs/replication.md): creates the swarm's JetStream
 * stream if missing, writes the genesis if the log is new, replays the log into a local Swarm and
 * resolves once caught up, ready to serve.
 * @throws {ReplicationError} `InvalidInput`, `NoGenesis` (no genesis within `connectTimeoutMs`), `BadLog`
 * @example const rs = await connectSwarm({ servers: 'nats://127.0.0.1:4222', swarm: 'demo', profiles, config: swarmConfig(12, 2) });
 */
export async function connectSwarm(options: ConnectSwarmOptions): Promise<ReplicatedSwarm> {
  const issue = optionsIssue(options);
  if (issue !== undefined) throw new ReplicationError('InvalidInput', issue);
  const { connect } = await import('@nats-io/transport-node');
  const servers = typeof options.servers === 'string' ? [options.servers] : [...options.servers];
  const nc = await connect({ servers, maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: options.connectTimeoutMs ?? 30_000 });
  const rs = new ReplicatedSwarm(nc, options);
  try {
    await rs.start();
  } catch (error) {
    await rs.close();
    throw error;
  }
  return rs;
}

function optionsIssue(o: ConnectSwarmOptions): string | undefined {
  if (o === null || typeof o !== 'object') return 'options must be an object { servers, swarm, profiles?, config?, … }';
  const servers = typeof o.servers === 'string' ? [o.servers] : o.servers;
  if (!Array.isArray(servers) || servers.length === 0 || !servers.every((s) => typeof s === 'string')) return 'option "servers" must be a NATS URL or a non-empty array of them';
  if (typeof o.swarm !== 'string' || !NAME.test(o.swarm)) return `option "swarm" must be 1-64 letters, digits, "-" or "_", got ${String(o.swarm)}`;
  if ((o.profiles === undefined) !== (o.config === undefined)) return 'options "profiles" and "config" go together: both (a genesis for a new log) or neither';
  if (o.seed !== undefined && !Number.isInteger(o.seed)) return `option "seed" must be an integer, got ${String(o.seed)}`;
  if (o.replicaId !== undefined && (typeof o.replicaId !== 'string' || !NAME.test(o.replicaId))) return `option "replicaId" must be 1-64 letters, digits, "-" or "_", got ${String(o.replicaId)}`;
  if (o.snapshotEvery !== undefined && !(Number.isInteger(o.snapshotEvery) && o.snapshotEvery >= 0)) return `option "snapshotEvery" must be an integer >= 0 (0: no snapshots), got ${String(o.snapshotEvery)}`;
  for (const key of ['proposeTimeoutMs', 'connectTimeoutMs', 'reconcileAfterMs'] as const) {
    const v = o[key];
    if (v !== undefined && !(typeof v === 'number' && Number.isFinite(v) && v >= 0)) return `option "${key}" must be a finite number of ms >= 0, got ${String(v)}`;
  }
  return undefined;
}

interface Waiter {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/** A random replica id: 10 base-36 characters from the platform's random source. */
function randomReplicaId(): string {
  const bytes = new Uint8Array(8);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => (b % 36).toString(36)).join('');
}

/**
 * One orchestrator's replica of a swarm whose membership and lifecycle events go through a
 * JetStream stream (docs/replication.md). Lifecycle calls propose an entry and resolve once it
 * came back from the stream and was applied here, in stream order, as on every replica. Routing,
 * reservations, sessions and telemetry are this replica's own and synchronous, as on a `Swarm`.
 * Create it with {@link connectSwarm}.
 */
export class ReplicatedSwarm {
  /** This replica's name (the prefix of its proposals' ids). */
  readonly replicaId: string;
  /** The swarm's name. */
  readonly name: string;
  /** Every proposal id of this connection starts so: `<replica>.<connection>.`, unique across restarts (the stream dedupes by id). */
  private readonly prefix: string;
  private readonly stream: string;
  private readonly logSubject: string;
  private readonly hbSubject: string;
  private readonly io: Clock;
  private readonly options: ConnectSwarmOptions;
  private js: JetStreamClient | undefined;
  private jsm: JetStreamManager | undefined;
  private swarm: Swarm | undefined;
  private messages: ConsumerMessages | undefined;
  private heartbeats: Subscription | undefined;
  private link: ReplicationStatus = 'catching-up';
  /** Reconnects so far: a rejoin that a newer one overtook stops asking. */
  private rejoins = 0;
  private appliedSeq = 0;
  private snapshotSeq = 0;
  private snapshots: SnapshotStore | undefined;
  private readonly snapshotEvery: number;
  private entries = 0;
  private redelivered = 0;
  private staleMarks = 0;
  private refused = 0;
  private counter = 0;
  /** The sequence to reach before `catching-up` turns `connected`. */
  private target = 0;
  private closed = false;
  /** Per node: the last sequence of an entry applied on it (the basis own marks are checked against). */
  private readonly touched = new Map<string, number>();
  private readonly pending = new Map<string, Waiter>();
  /** Per node: the last own mark proposed, as `<type>@<basis>`, so one view of a node is proposed once. */
  private readonly marked = new Map<string, string>();
  private readonly listeners = new Set<(event: ReplicationEmitted) => void>();
  private readonly swarmHandlers = new Set<{ type: string; handler: (event: never) => void; off?: () => void }>();
  private caughtUp: Waiter | undefined;
  private reconcileTimer: unknown;

  /** @internal use {@link connectSwarm} */
  constructor(
    private readonly nc: NatsConnection,
    options: ConnectSwarmOptions,
  ) {
    this.options = options;
    this.name = options.swarm;
    this.replicaId = options.replicaId ?? randomReplicaId();
    this.prefix = `${this.replicaId}.${randomReplicaId()}.`;
    this.stream = `HECATE_${options.swarm}`;
    this.logSubject = `hecate.${options.swarm}.log`;
    this.hbSubject = `hecate.${options.swarm}.hb`;
    this.io = options.ioClock ?? systemClock;
    this.snapshotEvery = options.snapshotEvery ?? 500;
  }

  /** @internal Ensures the stream, writes the genesis if the log is new, catches up. */
  async start(): Promise<void> {
    const jsm = (this.jsm = await jetstreamManager(this.nc));
    this.js = jetstream(this.nc);
    let last: number;
    try {
      last = (await jsm.streams.info(this.stream)).state.last_seq;
    } catch {
      await jsm.streams.add({ name: this.stream, subjects: [this.logSubject], storage: StorageType.File, duplicate_window: 120_000_000_000 });
      last = (await jsm.streams.info(this.stream)).state.last_seq;
    }
    if (last === 0 && this.options.profiles !== undefined && this.options.config !== undefined) {
      const genesis: LogEntry = { v: 1, type: 'swarm.genesis', id: 'genesis', profiles: this.options.profiles.map(plainProfile), config: this.options.config, seed: this.options.seed ?? 1 };
      // A genesis no replica could build from must not reach the log: plan it here first (throws PlanError, SwarmError).
      new LocalSwarm(genesis.profiles, genesis.config, { seed: genesis.seed }).stop();
      try {
        await this.js.publish(this.logSubject, encodeEntry(genesis), { msgID: 'genesis', expect: { lastSequence: 0 } });
      } catch {
        // Another replica wrote the genesis first: the log's wins.
      }
    }
    this.target = Math.max(last, 1);
    if (this.snapshotEvery > 0) {
      this.snapshots = await SnapshotStore.open(this.nc, this.name);
      const stored = await this.snapshots.load();
      if (stored !== undefined && stored.seq <= last) await this.restore(stored);
    }
    this.heartbeats = this.nc.subscribe(this.hbSubject, { callback: (err, msg) => (err === null ? this.onHeartbeat(msg.string()) : undefined) });
    void this.watchStatus();
    const ready = new Promise<void>((resolve, reject) => {
      this.caughtUp = { resolve: () => resolve(), reject };
    });
    void this.consume();
    if (this.swarm !== undefined && this.appliedSeq >= this.target) this.setState('connected'); // the snapshot is the log's end
    const timeoutMs = this.options.connectTimeoutMs ?? 30_000;
    let timer: unknown;
    const timeout = new Promise<never>((_, reject) => {
      timer = this.io.setTimeout(() => {
        const why = this.swarm === undefined ? `swarm "${this.name}" has no genesis on its log: connect one replica with profiles and config first` : `not caught up with the log (${this.appliedSeq} of ${this.target} applied)`;
        reject(new ReplicationError(this.swarm === undefined ? 'NoGenesis' : 'Disconnected', `connectSwarm: after ${timeoutMs} ms, ${why}`));
      }, timeoutMs);
    });
    try {
      await Promise.race([ready, timeout]);
    } finally {
      this.io.clearTimeout(timer as never);
    }
  }

  // ── the log ──

  /** Applies the stream from the last applied sequence on, for ever: an ordered consumer, recreated after any failure. */
  private async consume(): Promise<void> {
    while (!this.closed) {
      try {
        const js = this.js as JetStreamClient;
        const consumer = await js.consumers.get(this.stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: this.appliedSeq + 1 });
        if (this.closed) return;
        // Short pull expiries: a consumer lost with a restarted server is noticed in seconds, not a minute.
        const messages = (this.messages = await consumer.consume({ max_messages: 512, expires: 5000 }));
        for await (const m of messages) {
          this.receive(m.seq, m.data, m.info.pending);
          if (this.closed) return;
        }
      } catch (error) {
        if (this.closed) return;
        if (error instanceof ReplicationError) {
          this.caughtUp?.reject(error);
          return;
        }
      }
      if (!this.closed) await this.sleep(250);
    }
  }

  private receive(seq: number, data: Uint8Array, pending: number): void {
    if (seq <= this.appliedSeq) {
      this.redelivered++;
      return;
    }
    let entry: LogEntry;
    try {
      entry = decodeEntry(data, seq);
    } catch (error) {
      if (this.swarm === undefined) throw error;
      // Bytes no replica writes: every replica skips them alike.
      this.appliedSeq = seq;
      this.refused++;
      return;
    }
    if (this.swarm === undefined) {
      if (entry.type !== 'swarm.genesis') throw new ReplicationError('BadLog', `log entry ${seq} of swarm "${this.name}" comes before any genesis (${entry.type})`);
      try {
        this.genesis(entry);
      } catch (cause) {
        throw new ReplicationError('BadLog', `the genesis of swarm "${this.name}" does not build a swarm: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
      }
    } else {
      this.apply(seq, entry);
    }
    this.appliedSeq = seq;
    this.entries++;
    if (this.snapshots !== undefined && seq % this.snapshotEvery === 0 && this.swarm !== undefined) {
      void this.snapshots.save({ v: 1, seq, swarm: persistSwarm(this.swarm), touched: [...this.touched] });
    }
    if (this.link === 'catching-up' && (pending === 0 || seq >= this.target)) this.setState('connected');
  }

  /** Builds the local Swarm from the genesis, or from a snapshot of it. */
  private genesis(entry: Extract<LogEntry, { type: 'swarm.genesis' }>, restore?: PersistedSwarm): void {
    const options = {
      leaseIdPrefix: `${this.replicaId}:`, // leases are local: two replicas' never share an id
      ...(this.options.clock !== undefined ? { clock: this.options.clock } : {}),
      ...(this.options.inspect !== undefined ? { inspect: this.options.inspect } : {}),
    };
    // Its node actors' own marks are handed over (`node.mark`): the log decides when each applies.
    const policy = { defersOwnMarks: true };
    const swarm = restore !== undefined ? restoreSwarm(entry.profiles, entry.config, restore, options, policy) : new LocalSwarm(entry.profiles, entry.config, { ...options, seed: entry.seed }, policy);
    this.swarm = swarm;
    swarm.on('node.mark', (e) => this.proposeMark(e.mark));
    for (const h of this.swarmHandlers) h.off = swarm.on(h.type as never, h.handler as never);
  }

  /**
   * Starts from a stored snapshot: the genesis (the log's first entry) with the persisted state,
   * then only the entries after it. A snapshot that does not restore (another genesis) is ignored:
   * the replica replays the whole log.
   */
  private async restore(stored: StoredSnapshot): Promise<void> {
    const first = await (this.jsm as JetStreamManager).streams.getMessage(this.stream, { seq: 1 });
    if (first === null) return;
    const entry = decodeEntry(first.data, 1);
    if (entry.type !== 'swarm.genesis') return;
    try {
      this.genesis(entry, stored.swarm);
    } catch {
      this.swarm?.stop();
      this.swarm = undefined;
      return;
    }
    this.appliedSeq = stored.seq;
    this.snapshotSeq = stored.seq;
    for (const [id, seq] of stored.touched) this.touched.set(id, seq);
  }

  /** Applies one entry through the local Swarm; settles the proposer's call if it is this replica's. */
  private apply(seq: number, entry: LogEntry): void {
    const swarm = this.swarm as Swarm;
    const waiter = this.pending.get(entry.id);
    this.pending.delete(entry.id);
    if (entry.type === 'swarm.genesis') {
      this.refused++;
      const error = new ReplicationError('BadLog', `log entry ${seq}: a second genesis`);
      this.emit({ type: 'replication.applied', seq, entry, error });
      return;
    }
    const nodeId = eventNode(entry.event);
    if (entry.basis !== undefined && nodeId !== undefined && (this.touched.get(nodeId) ?? 0) !== entry.basis) {
      // A mark decided on an older view of the node: another entry on it came first. Dropped alike everywhere.
      if (entry.id.startsWith(this.prefix)) {
        this.staleMarks++;
        this.reconcile(nodeId);
      }
      this.emit({ type: 'replication.applied', seq, entry });
      return;
    }
    let result: unknown;
    let error: Error | undefined;
    try {
      result = applyEvent(swarm, entry.event);
    } catch (e) {
      error = e instanceof Error ? e : new Error(String(e));
      this.refused++;
    }
    if (nodeId !== undefined) this.touched.set(nodeId, seq);
    if (waiter !== undefined) {
      if (error !== undefined) waiter.reject(error);
      else waiter.resolve(result);
    }
    this.emit(error !== undefined ? { type: 'replication.applied', seq, entry, error } : { type: 'replication.applied', seq, entry });
  }

  /** Puts a proposal on the log, retrying (same `Nats-Msg-Id`: the stream keeps one) until the deadline. */
  private async publish(entry: LogEntry, timeoutMs: number): Promise<void> {
    const js = this.js as JetStreamClient;
    const deadline = this.io.now() + timeoutMs;
    const data = encodeEntry(entry);
    for (;;) {
      if (this.closed) throw new ReplicationError('Closed', `replica "${this.replicaId}" of swarm "${this.name}" is closed`);
      try {
        await js.publish(this.logSubject, data, { msgID: entry.id, timeout: Math.max(Math.min(1000, deadline - this.io.now()), 100) });
        return;
      } catch (cause) {
        if (this.io.now() >= deadline) {
          throw new ReplicationError('Disconnected', `proposal ${entry.id} (${entry.type}) did not reach the log of swarm "${this.name}" within ${timeoutMs} ms`, { cause });
        }
        await this.sleep(200);
      }
    }
  }

  /** Proposes a lifecycle entry; resolves with what applying it here returned, once it came back from the log. */
  private propose<T>(event: LifecycleEvent): Promise<T> {
    if (this.closed) return Promise.reject(new ReplicationError('Closed', `replica "${this.replicaId}" of swarm "${this.name}" is closed`));
    const entry: LogEntry = { v: 1, type: 'swarm.event', id: `${this.prefix}${++this.counter}`, event };
    const applied = new Promise<T>((resolve, reject) => this.pending.set(entry.id, { resolve: resolve as (v: unknown) => void, reject }));
    this.publish(entry, this.options.proposeTimeoutMs ?? 10_000).catch((error: Error) => {
      const waiter = this.pending.get(entry.id);
      this.pending.delete(entry.id);
      waiter?.reject(error);
    });
    return applied;
  }

  /**
   * A mark the local node actors made: proposed once, on the node's history as applied here, and
   * only while connected (a cut-off replica's detector sees no heartbeats: its downs are not news).
   */
  private proposeMark(mark: OwnMark): void {
    if (this.link !== 'connected' || this.closed) return;
    const basis = this.touched.get(mark.nodeId) ?? 0;
    const key = `${mark.type}@${basis}`;
    if (this.marked.get(mark.nodeId) === key) return; // proposed already on this view of the node
    this.marked.set(mark.nodeId, key);
    const event: LifecycleEvent = mark.type === 'node.eject' ? { type: 'node.down', nodeId: mark.nodeId, cause: 'ejected' } : mark;
    const entry: LogEntry = { v: 1, type: 'swarm.event', id: `${this.prefix}${++this.counter}`, event, basis };
    this.publish(entry, 2000).catch(() => {
      // Lost with the connection: reconciled after the reconnect.
      if (this.marked.get(mark.nodeId) === key) this.marked.delete(mark.nodeId);
    });
  }

  /** Re-proposes what the node's actor here says and the swarm has not applied: a detector down, a revival. */
  private reconcile(nodeId: string): void {
    const swarm = this.swarm;
    if (swarm === undefined || this.link !== 'connected') return;
    const pending = swarm.node(nodeId)?.pending;
    if (pending !== undefined && pending.type !== 'node.eject') this.proposeMark(pending);
  }

  // ── connection ──

  private async watchStatus(): Promise<void> {
    for await (const s of this.nc.status()) {
      if (this.closed) return;
      if (s.type === 'disconnect') this.setState('disconnected');
      else if (s.type === 'reconnect') void this.rejoin();
    }
  }

  /** Back on NATS: catch up to the stream's end, then, once heartbeats had time to return, reconcile every node. */
  private async rejoin(): Promise<void> {
    const attempt = ++this.rejoins;
    this.setState('catching-up');
    // A fresh ordered consumer from the last applied sequence: the old one may have died with the server.
    this.messages?.stop();
    // JetStream recovering its streams after a server restart refuses its API for a while. On a
    // quiet swarm no entry will arrive to say the replica is caught up, and a replica that is not
    // connected proposes no marks: so ask again, with backoff, until it answers, the consumer
    // settles it, or a newer reconnect or close takes over.
    for (let waitMs = 100; ; waitMs = Math.min(2 * waitMs, 2000)) {
      try {
        const last = (await (this.jsm as JetStreamManager).streams.info(this.stream)).state.last_seq;
        if (attempt !== this.rejoins) return;
        this.target = last;
        if (this.appliedSeq >= last && this.link === 'catching-up') this.setState('connected');
        break;
      } catch {
        if (attempt !== this.rejoins || this.closed || this.link !== 'catching-up') break;
        await this.sleep(waitMs);
        if (attempt !== this.rejoins || this.closed || this.link !== 'catching-up') break;
      }
    }
    if (attempt !== this.rejoins || this.closed) return;
    this.io.clearTimeout(this.reconcileTimer as never);
    this.reconcileTimer = this.io.setTimeout(() => {
      const swarm = this.swarm;
      if (swarm === undefined || this.closed) return;
      for (const id of swarm.actor.getSnapshot().context.members.keys()) this.reconcile(id);
    }, this.options.reconcileAfterMs ?? 3000);
  }

  private setState(state: ReplicationStatus): void {
    if (this.link === state || this.link === 'closed') return;
    this.link = state;
    if (state === 'connected' && this.caughtUp !== undefined && this.swarm !== undefined) {
      this.caughtUp.resolve(undefined);
      this.caughtUp = undefined;
    }
    this.emit({ type: 'replication.changed', status: state, applied: this.appliedSeq });
  }

  /**
   * To every listener. A listener that throws must not stop replication (this runs inside the
   * log consumer and the connection watcher): its error is thrown again on its own, as XState
   * does for the Swarm's handlers, and the other listeners still hear the event.
   */
  private emit(event: ReplicationEmitted): void {
    for (const l of this.listeners) {
      try {
        l(event);
      } catch (error) {
        this.io.setTimeout(() => {
          throw error;
        }, 0);
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.io.setTimeout(() => resolve(), ms));
  }

  private onHeartbeat(nodeId: string): void {
    const swarm = this.swarm;
    if (swarm === undefined || this.closed || !swarm.actor.getSnapshot().context.members.has(nodeId)) return;
    try {
      swarm.heartbeat(nodeId);
    } catch {
      // Stopped meanwhile, or a clock without timers: nothing to detect with.
      return;
    }
    // Down by a detector (another replica's, or this one's before it last heard) yet heard now:
    // the local node actor, watching, will not report a revival itself; propose it.
    const context = swarm.actor.getSnapshot().context;
    if (context.detected.has(nodeId)) this.reconcile(nodeId);
  }

  private local(): Swarm {
    if (this.swarm === undefined || this.closed) throw new SwarmError('Stopped', `replica "${this.replicaId}" of swarm "${this.name}" is ${this.closed ? 'closed' : 'not connected yet'}`);
    return this.swarm;
  }

  // ── the public surface ──

  /** Where this replica stands with the log. */
  replication(): ReplicationStatus {
    return this.link;
  }

  /** This replica's counters: the last applied sequence, entries applied, redeliveries skipped, stale marks, refusals. */
  stats(): ReplicationStats {
    return { applied: this.appliedSeq, snapshot: this.snapshotSeq, entries: this.entries, redelivered: this.redelivered, staleMarks: this.staleMarks, refused: this.refused };
  }

  /**
   * The local Swarm's `digest()`: a stable hash of the plan, the status, every member's liveness
   * and the id counter, equal on replicas that applied the same entries.
   */
  digest(): string {
    return swarmDigest(this.local());
  }

  /**
   * The local Swarm, for reading and routing (it is what `route` and `session` use). Never call its
   * lifecycle methods: a change made there is not on the log, and this replica would diverge.
   */
  get swarmReplica(): Swarm {
    return this.local();
  }

  /** Marks a node down through the log; resolves with the rescue as applied here. @throws {ReplicationError} `Disconnected`, `Closed`; the Swarm's errors */
  markDown(nodeId: string): Promise<Rescue> {
    return this.propose({ type: 'node.down', nodeId, cause: 'manual' });
  }

  /** Marks a node alive through the log. */
  markAlive(nodeId: string): Promise<Revival> {
    return this.propose({ type: 'node.alive', nodeId, cause: 'manual' });
  }

  /** Adds a node through the log; resolves with the growth as applied here (the same on every replica). */
  addNode(profile: NodeProfile): Promise<Growth> {
    return this.propose({ type: 'node.added', profile: plainProfile(profile) });
  }

  /** Retires a node through the log. */
  removeNode(nodeId: string): Promise<Retirement> {
    return this.propose({ type: 'node.removed', nodeId });
  }

  /**
   * A heartbeat of a node, published on the core NATS subject `hecate.<swarm>.hb`: every replica's
   * detector gets it (this one too, when it comes back). Not durable: a heartbeat is only news now,
   * so one given while cut off from NATS is dropped, not buffered.
   * @throws {SwarmError} `UnknownNode` for a node this replica does not know, `Stopped`
   */
  heartbeat(nodeId: string): void {
    const swarm = this.local();
    if (!swarm.actor.getSnapshot().context.members.has(nodeId)) {
      throw new SwarmError('UnknownNode', `heartbeat of unknown node "${String(nodeId)}" on replica "${this.replicaId}" of swarm "${this.name}"`);
    }
    // Cut off, the client would buffer it and deliver it late as if fresh: a heartbeat is news only now.
    if (this.link !== 'disconnected') this.nc.publish(this.hbSubject, nodeId);
  }

  /** Routes on this replica's view (synchronous, local; see `Swarm.route`). */
  route(request?: SwarmRequest): Route;
  route(request: SwarmRequest | undefined, options: RouteOptions & { reserve: true }): LeasedRoute;
  route(request?: SwarmRequest, options?: RouteOptions): Route | LeasedRoute;
  route(request?: SwarmRequest, options?: RouteOptions): Route | LeasedRoute {
    return this.local().route(request, options);
  }

  /** Ends a reservation made on this replica (local). */
  release(lease: Lease | string, outcome?: ReleaseOutcome): void {
    this.local().release(lease, outcome);
  }

  /** Reservations in flight on this replica (local: replicas do not share them). */
  inFlight(): number {
    return this.local().inFlight();
  }

  /** Telemetry into this replica's own EWMAs (local). */
  report(nodeId: string, sample: TelemetrySample): NodeTelemetry {
    return this.local().report(nodeId, sample);
  }

  /** A session on this replica (local). */
  session<T>(request: SwarmRequest, runStage: StageRunner<T>, options?: SessionOptions): Session<T> {
    return openSession(this.local(), request, runStage, options);
  }

  /** One-step session on this replica (local). */
  execute<T>(request: SwarmRequest, input: T, runStage: StageRunner<T>, options?: SessionOptions): Promise<T> {
    return executeOnce(this.local(), request, input, runStage, options);
  }

  status(): SwarmStatus {
    return this.local().status();
  }

  state(): SwarmState {
    return this.local().state();
  }

  /**
   * Listens to the local Swarm's events (as `Swarm.on`; they fire when an entry is applied here)
   * and to `replication.changed` / `replication.applied`. Returns the unsubscribe.
   */
  on<T extends ReplicationEmitted['type']>(type: T, handler: (event: Extract<ReplicationEmitted, { type: T }>) => void): () => void;
  on<T extends SwarmEmitted['type'] | '*'>(type: T, handler: (event: T extends '*' ? SwarmEmitted : Extract<SwarmEmitted, { type: T }>) => void): () => void;
  on(type: string, handler: (event: never) => void): () => void {
    if (type === 'replication.changed' || type === 'replication.applied') {
      const l = (e: ReplicationEmitted) => {
        if (e.type === type) (handler as (e: ReplicationEmitted) => void)(e);
      };
      this.listeners.add(l);
      return () => this.listeners.delete(l);
    }
    const h: { type: string; handler: (event: never) => void; off?: () => void } = { type, handler };
    this.swarmHandlers.add(h);
    if (this.swarm !== undefined) h.off = this.swarm.on(type as never, handler as never);
    return () => {
      this.swarmHandlers.delete(h);
      h.off?.();
    };
  }

  /** Leaves: stops applying, rejects pending calls with `Closed`, stops the local Swarm, closes the connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.setState('closed');
    this.closed = true;
    this.io.clearTimeout(this.reconcileTimer as never);
    const closedError = () => new ReplicationError('Closed', `replica "${this.replicaId}" of swarm "${this.name}" closed before the entry came back`);
    for (const w of this.pending.values()) w.reject(closedError());
    this.pending.clear();
    this.caughtUp?.reject(new ReplicationError('Closed', `replica "${this.replicaId}" closed while connecting`));
    this.caughtUp = undefined;
    this.heartbeats?.unsubscribe();
    try {
      await this.messages?.close();
    } catch {
      // already gone with the connection
    }
    this.swarm?.stop();
    await this.nc.close();
  }
}
