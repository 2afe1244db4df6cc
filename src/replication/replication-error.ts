/** Why a replicated swarm refused or gave up. */
export type ReplicationErrorCode = 'InvalidInput' | 'Disconnected' | 'Closed' | 'NoGenesis' | 'BadLog';

/**
 * A replicated swarm (docs/replication.md) could not do what was asked: a bad option, a proposal
 * that did not reach the log in time (`Disconnected`), a replica closed under a pending call, a
 * swarm whose log has no genesis yet, or a log entry no replica could have written (`BadLog`).
 */
export class ReplicationError extends Error {
  override readonly name = 'ReplicationError';
  readonly code: ReplicationErrorCode;
  constructor(code: ReplicationErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}
