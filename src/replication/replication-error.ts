/** Why a replicated swarm refused or gave up. */
export type ReplicationErrorCode = 'InvalidInput' | 'Disconnected' | 'Closed' | 'NoGenesis' | 'BadLog' | 'UnknownVersion' | 'Trimmed' | 'Refused' | 'Rejected';

/**
 * A replicated swarm (docs/replication.md) could not do what was asked: a bad option, a proposal
 * that did not reach the log in time (`Disconnected`), a replica closed under a pending call, a
 * swarm whose log has no genesis yet, a log entry no replica could have written (`BadLog`), a log
 * entry or snapshot in a format version this release does not read (`UnknownVersion`), or a log
 * trimmed past where this replica stands with no snapshot to start from (`Trimmed`).
 */
export class ReplicationError extends Error {
  override readonly name = 'ReplicationError';
  readonly code: ReplicationErrorCode;
  constructor(code: ReplicationErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}
