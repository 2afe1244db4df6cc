import { execFile } from 'node:child_process';

/** The built CLI (`npm test` builds first). */
export const BIN = 'dist/src/cli/main.js';

/** What one run of the CLI gave. */
export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the built CLI as a child process; async so independent runs overlap. */
export function cli(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}
