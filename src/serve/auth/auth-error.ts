/** The one error class of the swarm's credential files: secret files and agent state files. */

/** Why a credential could not be loaded. */
export type AuthErrorCode =
  /** A secret file cannot be read or created, is readable by others, or is too short. */
  | 'SecretFile'
  /** An agent's state file (its key pair) cannot be read, created or parsed, or is another agent's. */
  | 'StateFile';

/** A credential file problem; the message names the file. */
export class AuthError extends Error {
  override readonly name = 'AuthError';
  readonly code: AuthErrorCode;
  constructor(code: AuthErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}
