/**
 * A replica's agent id → public key bindings (docs/replication.md, "Key bindings"), across a
 * rolling upgrade. Bindings go on the log as signed entries (format version 2), which a replica of
 * the release before cannot read; so while the writers still write version 1 (the log's floor is
 * 1 and a replica that reads only 1 is live, or the writer has not heard the others for a whole
 * liveness window yet: write-format.ts), a binding stays local to the orchestrator that made it, as
 * before bindings were replicated. Once the writers write version 2, each local binding is put on
 * the log (the first applied wins, as for any bind) and forgotten here.
 */
import { KeyBindingTable, type BindingOutcome } from './key-binding-table.js';
import { ReplicationError } from './replication-error.js';

/** What the bindings need of the replica. */
export interface KeyBindingsHost {
  /** `replica "<id>" of swarm "<name>"`, for messages. */
  readonly who: string;
  /** Whether the replica has the swarm secret (bindings are signed entries: none without it). */
  readonly signed: boolean;
  /** The bindings the log holds (applied in stream order). */
  readonly log: KeyBindingTable;
  /** The format version this replica writes now. */
  format(): number;
  /** Proposes a binding entry (version 2); resolves with what applying it here did. */
  propose(nodeId: string, key: string | null): Promise<BindingOutcome>;
}

/** The log's bindings, and this replica's own ones made while the log could not hold them. */
export class ReplicaKeyBindings {
  /** Bindings made here while the writers wrote version 1 (not on the log, not in the snapshot). */
  private readonly local = new KeyBindingTable();
  private flushing = false;

  constructor(private readonly host: KeyBindingsHost) {}

  /** The key `nodeId` is bound to: the log's, else a local one. */
  keyOf(nodeId: string): string | undefined {
    return this.host.log.keyOf(nodeId) ?? this.local.keyOf(nodeId);
  }

  /**
   * Binds `nodeId` to `key`: through the log when the writers write version 2, here otherwise.
   * @throws {ReplicationError} `InvalidInput` for an empty id or key, or without the swarm secret; the proposal's errors
   */
  async bind(nodeId: string, key: string): Promise<BindingOutcome> {
    this.check(nodeId, key);
    if (this.host.format() >= 2) {
      try {
        await this.flushOne(nodeId); // a local binding made first goes first
        return await this.host.propose(nodeId, key);
      } catch (error) {
        if (!refused(error)) throw error;
        // The writers went back to version 1 between this check and the proposal's: bound here, as at version 1.
      }
    }
    const onLog = this.host.log.keyOf(nodeId);
    return onLog !== undefined ? { bound: onLog === key, key: onLog } : this.local.apply(nodeId, key);
  }

  /** Frees `nodeId`: here, and on the log when the writers write version 2 (refused there meanwhile: here only, as at version 1). */
  async unbind(nodeId: string): Promise<BindingOutcome> {
    this.check(nodeId, null);
    const local = this.local.apply(nodeId, null);
    const removedHere = 'removed' in local && local.removed;
    if (this.host.format() < 2) return local;
    try {
      const onLog = await this.host.propose(nodeId, null);
      return { removed: removedHere || ('removed' in onLog && onLog.removed) };
    } catch (error) {
      if (!refused(error)) throw error;
      return local;
    }
  }

  /** Once the writers write version 2: puts every local binding on the log (one at a time; a failed one is tried at the next call). */
  flush(): void {
    if (this.flushing || this.local.size === 0 || this.host.format() < 2) return;
    this.flushing = true;
    void (async () => {
      for (const [nodeId] of this.local.entries()) await this.flushOne(nodeId);
    })()
      .catch(() => undefined)
      .finally(() => (this.flushing = false));
  }

  private check(nodeId: string, key: string | null): void {
    if (typeof nodeId !== 'string' || nodeId.length === 0 || (key !== null && (typeof key !== 'string' || key.length === 0))) throw new ReplicationError('InvalidInput', `a key binding needs an agent id and a key, got ${JSON.stringify(nodeId)} → ${JSON.stringify(key)}`);
    if (!this.host.signed) throw new ReplicationError('InvalidInput', `${this.host.who} has no swarm secret: key bindings go on the log only signed (option "secret")`);
  }

  /** Puts the local binding of `nodeId`, if any, on the log, then forgets it here. */
  private async flushOne(nodeId: string): Promise<void> {
    const key = this.local.keyOf(nodeId);
    if (key === undefined) return;
    await this.host.propose(nodeId, key);
    if (this.local.keyOf(nodeId) === key) this.local.apply(nodeId, null);
  }
}

/** Whether `error` is the proposal's refusal of a version-2 entry while the writers write version 1 (proposer.ts). */
function refused(error: unknown): boolean {
  return error instanceof ReplicationError && error.code === 'Refused';
}
