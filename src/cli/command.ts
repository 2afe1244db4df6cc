/** The shape every `hecate-node` command implements, and the IO it is given. */

/** The only IO a command may do; main.ts binds it to the process, tests may bind it to memory. */
export interface CliIO {
  /** Directory relative paths are read from. */
  readonly cwd: string;
  /**
   * Reads a file of at most `maxBytes` (its bytes, or its text for an in-memory IO).
   * @throws the fs error (ENOENT…) or a `BoundedReadError` — use `readInput` to turn it into an InputError.
   */
  readFile(path: string, maxBytes: number): Uint8Array | string;
  /** Whether stderr is a terminal (a redrawn progress bar) or not (progress lines). @defaultValue false */
  readonly stderrIsTTY?: boolean;
  stdout(text: string): void;
  stderr(text: string): void;
  /**
   * Resolves with the signal that ends a long-running command (serve, agent, inspect); each call
   * waits for the next one. An embedding (a test running the CLI in its own process) passes its own.
   * @defaultValue the process's first SIGTERM or SIGINT
   */
  until?(): Promise<NodeJS.Signals>;
}

/** One subcommand: `hecate-node <name> ...`. */
export interface Command {
  readonly name: string;
  /** One line for `hecate-node --help`. */
  readonly summary: string;
  /** Runs the command; returns the exit code. Throws UsageError or InputError for bad input (exit 2). */
  run(argv: readonly string[], io: CliIO): number | Promise<number>;
}
