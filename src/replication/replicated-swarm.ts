/**
 * One orchestrator's replica of a swarm whose membership and lifecycle events go through a NATS
 * JetStream stream (docs/replication.md): the public class. Its reads are the local Swarm's
 * (`SwarmFront`); its lifecycle commands commit through the log.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { SwarmEmitted } from '../../machines/swarm-context.js';
import { SwarmError } from '../core/errors.js';
import { swarmDigest } from '../persistence/persist-swarm.js';
import type { LifecycleEvent } from '../persistence/persisted.js';
import { systemClock } from '../runtime/clock.js';
import { plainProfile } from '../runtime/plain.js';
import type { LifecycleCommand, LifecycleResult } from '../runtime/swarm-contract.js';
import type { Rebalance } from '../runtime/rebalance-hook.js';
import { kCommit, kLocal, SwarmFront } from '../runtime/swarm-front.js';
import { Swarm } from '../runtime/swarm.js';
import type { Clock, SwarmRequest } from '../runtime/types.js';
import type { Session } from '../sessions/session.js';
import { executeOnce, openSession } from '../sessions/session-swarm.js';
import type { SessionOptions, StageRunner } from '../sessions/session-types.js';
import { randomName, type ConnectSwarmOptions } from './connect-options.js';
import { LogApplier, type GenesisEntry } from './log-applier.js';
import { ReplicaLoad, type SharedLoad } from './replica-load.js';
import { LogCompactor } from './log-compactor.js';
import { shareAdmission } from './admission-share.js';
import type { BindingOutcome } from './key-binding-table.js';
import { encodeEntry, eventNode, MOVES_FORMAT, type LogEntry } from './log-entry.js';
import { MemberForgetting } from './member-forgetting.js';
import type { LogStream } from './log-stream.js';
import { Proposer } from './proposer.js';
import { ReplicaKeyBindings } from './replica-key-bindings.js';
import { kFormats, ReplicaTrust } from './replica-trust.js';
import { ReplicaLink } from './replica-link.js';
import { ReplicaMoves } from './replica-moves.js';
import { REPLICATION_EVENTS, ReplicationListeners, type ReplicationEmitted, type ReplicationStats, type ReplicationStatus } from './replication-events.js';
import { ReplicationError } from './replication-error.js';
import { SnapshotStore } from './snapshot-store.js';

/** The parts of a replica, for the package's own fault tests (not exported from any entry). */
export const kReplica: unique symbol = Symbol('hecate-swarm.replica');

/**
 * One orchestrator's replica of a swarm whose membership and lifecycle events go through a
 * JetStream stream (docs/replication.md). Lifecycle calls (`markDown`, `markAlive`, `addNode`,
 * `removeNode`) propose an entry and resolve once it came back from the stream and was applied
 * here, in stream order, as on every replica; they reject with `ReplicationError` `Disconnected`
 * or `Closed`, or the Swarm's own errors. Routing, reservations, sessions and telemetry are this
 * replica's own and synchronous, as on a `Swarm`. Create it with `connectSwarm`.
 */
export class ReplicatedSwarm extends SwarmFront<'log'> {
  /** This replica's name (the prefix of its proposals' ids). */
  readonly replicaId: string;
  /** The swarm's name. */
  readonly name: string;
  /** @internal */
  readonly [kReplica]: { readonly log: LogStream; readonly link: ReplicaLink };
  private readonly io: Clock;
  private readonly listeners: ReplicationListeners;
  private readonly applier: LogApplier;
  private readonly proposer: Proposer;
  private readonly link: ReplicaLink;
  private readonly trust: ReplicaTrust;
  private readonly bindings: ReplicaKeyBindings;
  private readonly moves: ReplicaMoves;
  private store: SnapshotStore | undefined;
  /** The shared load signal (docs/replication.md, "Shared load"); undefined with `shareLoad: false`. */
  readonly load: ReplicaLoad | undefined;
  private compactor: LogCompactor | undefined;
  private forgetting: MemberForgetting | undefined;
  private announceTimer: unknown;
  private closed = false;

  /** @internal use `connectSwarm` */
  constructor(
    private readonly nc: NatsConnection,
    private readonly log: LogStream,
    private readonly options: ConnectSwarmOptions,
  ) {
    super();
    this.name = options.swarm;
    this.replicaId = options.replicaId ?? randomName();
    const io = (this.io = options.ioClock ?? systemClock);
    const floor = () => this.applier?.floor ?? 1; // the log's (write-format.ts): heartbeats, load and announcements follow it
    const trust = (this.trust = new ReplicaTrust(options.swarm, options.secret, options.wallClock, floor, (options as { [kFormats]?: readonly number[] })[kFormats]));
    const listeners = (this.listeners = new ReplicationListeners(io));
    const emit = (event: ReplicationEmitted) => {
      if (event.type === 'replication.applied' && event.entry.type === 'swarm.event') {
        const nodeId = eventNode(event.entry.event);
        if (nodeId !== undefined) this.forgetting?.heard(nodeId);
        if (nodeId !== undefined && event.entry.event.type === 'node.removed' && event.error === undefined) this.compactor?.removed(nodeId);
      }
      listeners.emit(event);
    };
    const { name, replicaId } = this;
    const closed = () => this.closed;
    // Never below the log's floor; above it only as the announcements heard allow (write-format.ts).
    const format = () => this.compactor?.format() ?? floor();
    const seal = (entry: LogEntry) => trust.seal(entry);
    this.proposer = new Proposer({ name, replicaId, io, log, proposeTimeoutMs: options.proposeTimeoutMs ?? 10_000, closed, connected: () => this.link.status() === 'connected', format, seal }, randomName());
    this.link = new ReplicaLink({
      io,
      log,
      reconcileAfterMs: options.reconcileAfterMs ?? 3000,
      applied: () => this.applier.applied,
      built: () => this.applier.swarm !== undefined,
      reconcileAll: () => this.reconcileAll(),
      emit,
    });
    this.load = options.shareLoad === false ? undefined : new ReplicaLoad(nc, name, replicaId, randomName(), io, options, this.trust.signer, () => this.link.status() !== 'disconnected' && !this.closed, floor);
    const othersRunOn = (nodes: ReadonlySet<string>) => [...nodes].some((id) => (this.load?.shared().inflight[id] ?? 0) > 0);
    const moves = (this.moves = new ReplicaMoves({ plugin: options.rebalancer, movePrefix: `${this.proposer.prefix}m`, who: `replica "${replicaId}" of swarm "${name}"`, signed: trust.signer !== undefined, othersRunOn, propose: (event) => this.proposer.proposeEntry((v, id) => ({ v, type: 'swarm.rebalance', id, event }), MOVES_FORMAT) }));
    const rebalancer = moves.plugin();
    const swarmOptions = {
      leaseNamespace: `${replicaId}:`, // leases are local: two replicas' never share an id
      ...(rebalancer !== undefined ? { rebalancer } : {}),
      ...(options.clock !== undefined ? { clock: options.clock } : {}),
      ...(options.inspect !== undefined ? { inspect: options.inspect } : {}),
      ...(options.prefixCache !== undefined ? { prefixCache: options.prefixCache } : {}),
    };
    this.applier = new LogApplier({
      name,
      swarmOptions,
      built: (swarm) => {
        swarm.on('node.mark', (e) => this.proposer.proposeMark(e.mark, this.applier.touched.get(e.mark.nodeId) ?? 0));
        this.load?.attach(swarm);
      },
      settle: (id, result, error) => this.proposer.settle(id, result, error),
      own: (id) => this.proposer.own(id),
      stale: (nodeId) => this.reconcile(nodeId),
      outdated: (id, nodeId) => { this.proposer.again(id, nodeId); if (nodeId !== undefined) this.reconcile(nodeId); }, // proposed again at the format written now
      advanced: (seq, pending) => this.link.advanced(seq, pending),
      boundary: (seq, stored) => void (stored ? this.compactor?.stored(seq) : this.compactor?.boundary()),
      format,
      reads: trust.formats,
      ...(trust.acceptance !== undefined ? { acceptance: trust.acceptance } : {}),
      emit,
    });
    const forgetAfterMs = options.forgetAfterMs ?? 0;
    if (forgetAfterMs > 0) {
      this.forgetting = new MemberForgetting({
        io,
        forgetAfterMs,
        swarm: () => (this.link.status() === 'connected' && !this.closed ? this.applier.swarm : undefined),
        forget: (nodeId) => this.proposer.proposeForget(nodeId, this.applier.touched.get(nodeId) ?? 0),
      });
    }
    this.bindings = new ReplicaKeyBindings({ who: `replica "${replicaId}" of swarm "${name}"`, signed: trust.signer !== undefined, log: this.applier.bindings, format, propose: (nodeId, key) => this.proposer.proposeEntry<BindingOutcome>((v, id) => ({ v, type: 'swarm.binding', id, nodeId, key }), 2) });
    this[kReplica] = { log, link: this.link };
  }

  /**
   * @internal Writes the genesis if the log (from `first` to `last`) is new, starts from the stored
   * snapshot (always when the log was trimmed), catches up, then announces its progress.
   */
  async start(last: number, first = 1): Promise<void> {
    const { profiles, config } = this.options;
    if (last > 1) this.applier.tail(await this.log.entryAt(last)); // a signed log: unsigned messages are not taken while catching up
    if (last === 0 && profiles !== undefined && config !== undefined) {
      const genesis: GenesisEntry = { v: this.trust.signer !== undefined ? 2 : 1, type: 'swarm.genesis', id: 'genesis', profiles: profiles.map(plainProfile), config, seed: this.options.seed ?? 1 }; // signed with the secret (version 2, the log sealed from its first entry); version 1 without
      // A genesis no replica could build from must not reach the log: plan it here first (throws PlanError, SwarmError).
      new Swarm(genesis.profiles, genesis.config, { seed: genesis.seed }).stop();
      await this.log.writeGenesis(encodeEntry(this.trust.seal(genesis)));
    }
    const every = this.options.snapshotEvery ?? 500;
    const store = (this.store = await SnapshotStore.open(this.nc, this.name, this.options.streamReplicas ?? 1, this.trust.formats, this.trust.signer));
    this.compactor = new LogCompactor(
      {
        swarm: this.name,
        replicaId: this.replicaId,
        io: this.io,
        log: this.log,
        nc: this.nc,
        marginEntries: this.options.trimMargin ?? 500,
        graceMs: this.options.replicaGraceMs ?? 60_000,
        directoryGraceMs: 2 * (this.options.proposeTimeoutMs ?? 10_000),
        applied: () => this.applier.applied,
        member: (id) => this.applier.swarm?.node(id) !== undefined,
        reads: this.trust.formats,
        writes: this.trust.formats,
        floor: () => this.applier.floor,
        ...(this.trust.signer !== undefined ? { signer: this.trust.signer } : {}),
      },
      store.kv,
    );
    await this.compactor.open();
    await this.compactor.announce().catch(() => undefined); // learns the write format; holds the trim back from here
    const trimmed = first > 1;
    if (every > 0) this.applier.saveTo(store.keepingSigned(() => this.compactor?.secretAround() === true), every);
    if (every > 0 || trimmed) {
      const stored = await store.load();
      if (stored !== undefined && stored.seq <= last && stored.seq + 1 >= first) {
        const genesis = stored.genesis ?? this.trust.firstEntry(await this.log.first());
        if (genesis !== undefined) this.applier.restore(genesis, stored);
      }
      if (trimmed && this.applier.swarm === undefined) {
        throw new ReplicationError('Trimmed', `the log of swarm "${this.name}" starts at entry ${first} (trimmed) and the KV snapshot ${stored === undefined ? (store.rejected > 0 ? 'is an unsigned snapshot (not signed with this swarm secret)' : 'is missing') : `at ${stored.seq}${stored.genesis === undefined ? ' has no genesis' : ' does not reach it'}`}: no replica can start from it`);
      }
    }
    this.log.listen((text) => {
      const nodeId = this.trust.heartbeats.decode(text);
      if (nodeId !== undefined) this.onHeartbeat(nodeId);
    });
    const running = () => !this.closed;
    void this.log.watch((change) => { this.compactor?.relisten(change); this.link.changed(change); }, running); // (the liveness window starts again: write-format.ts)
    const ready = this.link.caughtUpWith(last);
    const applier = this.applier;
    void this.log.consume(() => applier.applied + 1, (seq, data, pending, storedAt) => applier.receive(seq, data, pending, storedAt), running, (e) => e instanceof ReplicationError, this.io).catch((error: Error) => {
      this.link.fail(error);
      this.link.halt(error);
    });
    const timeoutMs = this.options.connectTimeoutMs ?? 30_000;
    let timer: unknown;
    const timeout = new Promise<never>((_, reject) => {
      timer = this.io.setTimeout(() => {
        const built = applier.swarm !== undefined;
        const why = built ? `not caught up with the log (${applier.applied} applied)` : `swarm "${this.name}" has no genesis on its log: connect one replica with profiles and config first`;
        reject(new ReplicationError(built ? 'Disconnected' : 'NoGenesis', `connectSwarm: after ${timeoutMs} ms, ${why}`));
      }, timeoutMs);
    });
    try {
      await Promise.race([ready, timeout]);
    } finally {
      this.io.clearTimeout(timer as never);
    }
    this.announceEvery(Math.min(5000, (this.options.replicaGraceMs ?? 60_000) / 4));
    this.forgetting?.start();
    this.load?.channel.start();
  }

  /** Announces the applied sequence now and every `ms` (so the trim waits for this replica). */
  private announceEvery(ms: number): void {
    const tick = () => {
      if (this.closed) return;
      if (this.link.status() === 'connected') this.bindings.flush(); // local bindings go on the log once the writers write version 2
      if (this.link.status() !== 'disconnected') void this.compactor?.announce().then(() => this.applier.swarm !== undefined && shareAdmission(this.applier.swarm, this.compactor?.liveReplicas ?? 1, this.load !== undefined)).catch(() => undefined);
      this.announceTimer = this.io.setTimeout(tick, ms);
    };
    tick();
  }

  // ── what a replica adds ──

  /** Where this replica stands with the log. */
  replication(): ReplicationStatus {
    return this.link.status();
  }

  /** The other replicas' reservations per node as merged here, priced with its own (docs/replication.md, "Shared load"); empty with `shareLoad: false`. */
  sharedLoad(): SharedLoad {
    return this.load?.shared() ?? { replicas: [], inflight: {} };
  }

  /** This replica's counters: the last applied sequence, entries applied, redeliveries skipped, stale marks, refusals, rejections. */
  stats(): ReplicationStats {
    const rejectedMessages = this.trust.heartbeats.rejected + (this.compactor?.rejected ?? 0) + (this.store?.rejected ?? 0) + (this.load?.rejected() ?? 0);
    return { ...this.applier.stats(), rejectedMessages, format: this.compactor?.format() ?? this.applier.floor, heldBy: this.compactor?.heldBy() ?? [] };
  }

  /** Key bindings (docs/replication.md, "Key bindings"): the public key agent id `nodeId` is bound to on the log, if any. */
  keyOf(nodeId: string): string | undefined {
    return this.bindings.keyOf(nodeId);
  }

  /**
   * Binds agent id `nodeId` to `key` through the log, unless the log bound it to a key first;
   * resolves once applied here with whether it is `key`'s (false: another key's). While the writers
   * write format version 1 (a rolling upgrade), the binding stays on this replica until they write 2.
   * @throws {ReplicationError} `InvalidInput` without the swarm secret (bindings are signed entries), `Disconnected`, `Closed`, `Rejected`
   */
  async bindKey(nodeId: string, key: string): Promise<boolean> {
    const outcome = await this.bindings.bind(nodeId, key);
    return 'bound' in outcome && outcome.bound;
  }

  /** Frees agent id `nodeId` through the log; resolves with whether it was bound. @throws as {@link ReplicatedSwarm.bindKey} */
  async unbindKey(nodeId: string): Promise<boolean> {
    const outcome = await this.bindings.unbind(nodeId);
    return 'removed' in outcome && outcome.removed;
  }

  /** Decides moves on this replica's view and commits them through the log (docs/rebalance.md); resolves once applied here. @throws {ReplicationError} `InvalidInput` without a rebalancer or the secret, `Refused`, `Disconnected`, `Closed` */
  async rebalance(options?: unknown): Promise<Rebalance> {
    return this.moves.rebalance(this[kLocal](), options);
  }

  /** The local Swarm's `swarmDigest` (plan, status, members' liveness, id counter): equal on replicas that applied the same entries. */
  digest(): string {
    return swarmDigest(this[kLocal]());
  }

  /** The local Swarm, to read and route (`route`, `session` use it). Never call its lifecycle methods: a change not on the log diverges. */
  get swarmReplica(): Swarm {
    return this[kLocal]();
  }

  /** A session on this replica (local). */
  session<T>(request: SwarmRequest, runStage: StageRunner<T>, options?: SessionOptions): Session<T> {
    return openSession(this[kLocal](), request, runStage, options);
  }

  /** One-step session on this replica (local). */
  execute<T>(request: SwarmRequest, input: T, runStage: StageRunner<T>, options?: SessionOptions): Promise<T> {
    return executeOnce(this[kLocal](), request, input, runStage, options);
  }

  /**
   * A heartbeat of a node, published on the core NATS subject `hecate.<swarm>.hb`: every replica's
   * detector gets it (this one too, when it comes back). Not durable: a heartbeat is only news now,
   * so one given while cut off from NATS is dropped, not buffered.
   * @throws {SwarmError} `UnknownNode` for a node this replica does not know, `Stopped`
   */
  override heartbeat(nodeId: string): void {
    if (this[kLocal]().node(nodeId) === undefined) {
      throw new SwarmError('UnknownNode', `heartbeat of unknown node "${String(nodeId)}" on replica "${this.replicaId}" of swarm "${this.name}"`);
    }
    // Cut off, the client would buffer it and deliver it late as if fresh: a heartbeat is news only now.
    if (this.link.status() !== 'disconnected') this.log.heartbeat(this.trust.heartbeats.encode(nodeId));
  }

  /**
   * Listens to the local Swarm's events (as `Swarm.on`; they fire when an entry is applied here)
   * and to `replication.changed` / `replication.applied`. Returns the unsubscribe.
   */
  override on<T extends ReplicationEmitted['type']>(type: T, handler: (event: Extract<ReplicationEmitted, { type: T }>) => void): () => void;
  override on<T extends SwarmEmitted['type'] | '*'>(type: T, handler: (event: T extends '*' ? SwarmEmitted : Extract<SwarmEmitted, { type: T }>) => void): () => void;
  override on(type: string, handler: (event: never) => void): () => void {
    if (REPLICATION_EVENTS.has(type)) return this.listeners.add(type as ReplicationEmitted['type'], handler as (event: ReplicationEmitted) => void);
    // Closed, it listens to the stopped local Swarm (which says nothing more), as a stopped Swarm's `on` does.
    const stopped = this.closed ? this.applier.swarm : undefined;
    if (stopped !== undefined) return stopped.on(type as SwarmEmitted['type'], handler as (event: SwarmEmitted) => void);
    return super.on(type as SwarmEmitted['type'], handler as (event: SwarmEmitted) => void);
  }

  /** Leaves: stops applying, rejects pending calls with `Closed`, stops the local Swarm, closes the connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.load?.channel.close(); // first, while connected: the others stop counting this replica at once
    this.link.close();
    this.closed = true;
    this.io.clearTimeout(this.announceTimer as never);
    this.forgetting?.stop();
    await this.compactor?.withdraw().catch(() => undefined);
    this.proposer.rejectAll(() => new ReplicationError('Closed', `replica "${this.replicaId}" of swarm "${this.name}" closed before the entry came back`));
    this.link.fail(new ReplicationError('Closed', `replica "${this.replicaId}" closed while connecting`));
    await this.log.close();
    this.applier.swarm?.stop();
    await this.nc.close();
  }

  // ── the front's hooks ──

  /** The local Swarm every read goes to. @throws {SwarmError} `Stopped` once closed */
  protected [kLocal](): Swarm {
    const swarm = this.applier.swarm;
    if (swarm === undefined || this.closed) throw new SwarmError('Stopped', `replica "${this.replicaId}" of swarm "${this.name}" is ${this.closed ? 'closed' : 'not connected yet'}`);
    return swarm;
  }

  /** Proposes the command on the log; resolves with what applying it here returned. */
  protected [kCommit]<C extends LifecycleCommand>(command: C): Promise<LifecycleResult<C>> {
    const c = command as LifecycleCommand;
    // The wire form, as every replica applies it: a plain profile, the cause spelled out.
    const event: LifecycleEvent = c.type === 'node.added' ? { type: c.type, profile: plainProfile(c.profile) } : c.type === 'node.removed' ? { type: c.type, nodeId: c.nodeId } : ({ ...c, cause: c.cause ?? 'manual' } as LifecycleEvent);
    return this.proposer.propose(event);
  }

  // ── what the node actors saw ──

  /** Re-proposes what the node's actor here says and the swarm has not applied: a detector down, a revival. */
  private reconcile(nodeId: string): void {
    const swarm = this.applier.swarm;
    if (swarm === undefined || this.closed || this.link.status() !== 'connected') return;
    const pending = swarm.node(nodeId)?.pending;
    if (pending !== undefined && pending.type !== 'node.eject') this.proposer.proposeMark(pending, this.applier.touched.get(nodeId) ?? 0);
  }

  /** Reconciles every member (after a reconnect, once heartbeats had time to return). */
  private reconcileAll(): void {
    const swarm = this.applier.swarm;
    if (swarm === undefined || this.closed) return;
    for (const id of Object.keys(swarm.state().nodes)) this.reconcile(id);
  }

  /** A heartbeat from any replica: into the local detector; a node down by a detector yet heard is reconciled. */
  private onHeartbeat(nodeId: string): void {
    const swarm = this.applier.swarm;
    if (swarm === undefined || this.closed || swarm.node(nodeId) === undefined) return;
    this.forgetting?.heard(nodeId);
    try {
      swarm.heartbeat(nodeId);
    } catch {
      // Stopped meanwhile, or a clock without timers: nothing to detect with.
      return;
    }
    // Down by a detector (another replica's, or this one's before it last heard) yet heard now:
    // the local node actor, watching, will not report a revival itself; propose it.
    if (swarm.node(nodeId)?.cause === 'detector') this.reconcile(nodeId);
  }
}
