/** The one error class of the swarm's credential files: secrets, agent state files, key bindings, TLS files. */

/** Why a credential could not be loaded. */
export type AuthErrorCode =
  /** A secret file cannot be read or created, is readable by others, or is too short. */
  | 'SecretFile'
  /** An agent's state file (its key pair) cannot be read, created or parsed, or is another agent's. */
  | 'StateFile'
  /** A TLS certificate, key or CA file cannot be read or is not PEM. */
  | 'TlsFile';

/** A credential file problem; the message names the file. */
export class AuthError extends Error {
  override readonly name = 'AuthError';
  readonly code: AuthErrorCode;
  constructor(code: AuthErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}
