/** The CLI's error for bad flags, arguments or setup, in a file of its own so `main.ts` loads it without zod. */

/** Bad flags or arguments: the CLI prints the message on one line and exits 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}
