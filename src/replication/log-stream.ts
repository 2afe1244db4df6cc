/**
 * A replicated swarm's log on NATS (docs/replication.md): the JetStream stream `HECATE_<name>` on
 * the subject `hecate.<name>.log`, and the core subject `hecate.<name>.hb` heartbeats go over.
 * Everything a replica says to or hears from NATS goes through here; what the entries mean is
 * the replica's.
 */
import { DeliverPolicy, jetstream, jetstreamManager, StorageType, type ConsumerMessages, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Clock } from '../runtime/types.js';

/** A change of the connection to NATS, as the replica needs it. */
export type LinkChange = 'disconnect' | 'reconnect';

/** The stream's messages as the consumer hands them over: sequence, bytes, how many are still behind, and when the stream stored it (ms since the epoch). */
export type LogReceiver = (seq: number, data: Uint8Array, pending: number, storedAt: number) => void;

/** A swarm's stream and subjects on one NATS connection. */
export class LogStream {
  /** The JetStream stream's name. */
  readonly stream: string;
  private readonly logSubject: string;
  private readonly hbSubject: string;
  private messages: ConsumerMessages | undefined;
  private heartbeats: Subscription | undefined;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    /** The JetStream API: `streams.info` is what a rejoin asks (a fault test stands in for it). */
    readonly jsm: JetStreamManager,
    swarm: string,
  ) {
    this.stream = `HECATE_${swarm}`;
    this.logSubject = `hecate.${swarm}.log`;
    this.hbSubject = `hecate.${swarm}.hb`;
  }

  /**
   * The swarm's stream on `nc`, created if missing (file storage, no limits but the replicas'
   * trimming, a 2-minute dedupe window, `replicas` copies on a NATS cluster).
   */
  static async open(nc: NatsConnection, swarm: string, replicas = 1): Promise<{ log: LogStream; last: number; first: number }> {
    const log = new LogStream(nc, jetstream(nc), await jetstreamManager(nc), swarm);
    try {
      return { log, ...(await log.bounds()) };
    } catch {
      await log.jsm.streams.add({ name: log.stream, subjects: [log.logSubject], storage: StorageType.File, duplicate_window: 120_000_000_000, num_replicas: replicas });
      return { log, ...(await log.bounds()) };
    }
  }

  /** The stream's last sequence now (0 when empty). @throws while JetStream cannot answer */
  async lastSeq(): Promise<number> {
    return (await this.bounds()).last;
  }

  /** The stream's first and last sequences and its message count now (`first` > 1 once trimmed). @throws while JetStream cannot answer */
  async bounds(): Promise<{ first: number; last: number; messages: number; bytes: number }> {
    const { state } = await this.jsm.streams.info(this.stream);
    return { first: state.first_seq, last: state.last_seq, messages: state.messages, bytes: state.bytes };
  }

  /** The stream's message at `seq`, or undefined (none, trimmed away, or the stream not answering). */
  async entryAt(seq: number): Promise<Uint8Array | undefined> {
    try {
      const m = await this.jsm.streams.getMessage(this.stream, { seq });
      return m === null ? undefined : m.data;
    } catch {
      return undefined;
    }
  }

  /** The stream's first message (the genesis), or undefined (none, or trimmed away). */
  async first(): Promise<Uint8Array | undefined> {
    try {
      const m = await this.jsm.streams.getMessage(this.stream, { seq: 1 });
      return m === null ? undefined : m.data;
    } catch {
      return undefined;
    }
  }

  /** Removes every entry below sequence `below` (JetStream purge by sequence on the log subject); resolves with how many went. */
  async trim(below: number): Promise<number> {
    return (await this.jsm.streams.purge(this.stream, { filter: this.logSubject, seq: below })).purged;
  }

  /** Writes the genesis if the stream is still empty; another replica's genesis, written first, wins. */
  async writeGenesis(data: Uint8Array): Promise<void> {
    try {
      await this.js.publish(this.logSubject, data, { msgID: 'genesis', expect: { lastSequence: 0 } });
    } catch {
      // Another replica wrote the genesis first: the log's wins.
    }
  }

  /** One attempt to put an entry on the stream under its id (`Nats-Msg-Id`: the stream keeps one per id). */
  async publish(id: string, data: Uint8Array, timeoutMs: number): Promise<void> {
    await this.js.publish(this.logSubject, data, { msgID: id, timeout: timeoutMs });
  }

  /**
   * Hands every message from `from()` on to `receive`, for ever: an ordered consumer, recreated
   * (from `from()` again) after any failure or {@link LogStream.restartConsumer}, until `running()`
   * is false. An error `receive` throws that `fatal` says is fatal ends it, rejected.
   */
  async consume(from: () => number, receive: LogReceiver, running: () => boolean, fatal: (error: unknown) => boolean, clock: Clock): Promise<void> {
    while (running()) {
      try {
        const consumer = await this.js.consumers.get(this.stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from() });
        if (!running()) return;
        // Short pull expiries: a consumer lost with a restarted server is noticed in seconds, not a minute.
        const messages = (this.messages = await consumer.consume({ max_messages: 512, expires: 5000 }));
        for await (const m of messages) {
          receive(m.seq, m.data, m.info.pending, Math.floor(m.info.timestampNanos / 1e6));
          if (!running()) return;
        }
      } catch (error) {
        if (!running()) return;
        if (fatal(error)) throw error;
      }
      if (running()) await new Promise<void>((resolve) => clock.setTimeout(() => resolve(), 250));
    }
  }

  /** Drops the consumer (it may have died with the server): {@link LogStream.consume} makes a fresh one. */
  restartConsumer(): void {
    this.messages?.stop();
  }

  /** Calls `onChange` when the connection to NATS drops or comes back, until the connection closes. */
  async watch(onChange: (change: LinkChange) => void, running: () => boolean): Promise<void> {
    for await (const s of this.nc.status()) {
      if (!running()) return;
      if (s.type === 'disconnect' || s.type === 'reconnect') onChange(s.type);
    }
  }

  /** Hears every heartbeat on the swarm's subject (any replica's), as its bytes' text (heartbeat-codec.ts). */
  listen(onHeartbeat: (text: string) => void): void {
    this.heartbeats = this.nc.subscribe(this.hbSubject, { callback: (err, msg) => (err === null ? onHeartbeat(msg.string()) : undefined) });
  }

  /** Publishes a heartbeat's bytes on the swarm's core subject (not durable: news only now). */
  heartbeat(text: string): void {
    this.nc.publish(this.hbSubject, text);
  }

  /** Stops listening and consuming. */
  async close(): Promise<void> {
    this.heartbeats?.unsubscribe();
    try {
      await this.messages?.close();
    } catch {
      // already gone with the connection
    }
  }
}
