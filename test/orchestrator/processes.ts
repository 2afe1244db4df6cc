/**
 * The built CLI's `serve` and `agent` for the serve tests, started on loopback, their first stdout
 * line awaited, and every one of them stopped at the end, whatever happened. Each runs in this
 * process (the CLI's `main` with its own stdout, stderr and signals: loopback sockets all the same)
 * unless the test is about the process itself, SIGKILL, SIGSTOP or its memory: `{ process: true }`
 * starts a child. `HECATE_TEST_PROCESSES=1` starts every one as a child.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll } from 'vitest';
import { BIN } from '../cli/run-cli.js';

/** A command run in this process: SIGTERM and SIGINT reach it; SIGKILL, SIGSTOP and a pid need a child. */
export interface InProcess {
  readonly pid: undefined;
  kill(signal?: NodeJS.Signals): boolean;
}

/** A started `hecate-node` command. */
export interface Child {
  readonly name: string;
  readonly process: ChildProcess | InProcess;
  /** Everything it wrote to stderr so far (for failure messages). */
  stderr(): string;
  /** Resolves with its exit code or signal. */
  readonly exited: Promise<string>;
}

/** Every child still to be stopped. */
const running = new Set<Child>();

/**
 * Starts `hecate-node ...args` and waits for a stdout line matching `ready` (its URL).
 * @returns the child and the first capture group of `ready`.
 */
export async function startCli(name: string, args: readonly string[], ready: RegExp, timeoutMs = 30_000, how: { readonly process?: boolean } = {}): Promise<{ child: Child; match: string }> {
  if (how.process !== true && process.env['HECATE_TEST_PROCESSES'] !== '1') return startInProcess(name, args, ready, timeoutMs);
  const proc = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    err = (err + chunk).slice(-20_000);
  });
  const exited = new Promise<string>((resolve) => proc.once('exit', (code, signal) => resolve(signal ?? `exit ${code}`)));
  const child: Child = { name, process: proc, stderr: () => err, exited };
  running.add(child);
  void exited.then(() => running.delete(child));
  const match = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${name} did not print its address within ${timeoutMs} ms; stderr: ${err}`)), timeoutMs);
    proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const m = ready.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve(m[1] ?? m[0]);
      }
    });
    void exited.then((how) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${how}) before it was ready; stderr: ${err}`));
    });
  });
  return { child, match };
}

/** The built CLI's `main` and its bounded file reader, loaded once per test file. */
let cli: Promise<{ main: (argv: readonly string[], io: CliIO) => Promise<number>; readBoundedFile: (path: string, maxBytes: number) => Uint8Array }> | undefined;

/** What `main` takes (src/cli/command.ts). */
type CliIO = import('../../src/cli/command.js').CliIO;

/** {@link startCli} in this process: `main(args)` with an IO whose `until` is this child's signals. */
async function startInProcess(name: string, args: readonly string[], ready: RegExp, timeoutMs: number): Promise<{ child: Child; match: string }> {
  const built = (file: string) => pathToFileURL(resolve(BIN, '..', file)).href;
  cli ??= Promise.all([import(built('main.js')), import(built('io.js'))]).then(([m, io]) => ({ main: m.main, readBoundedFile: io.readBoundedFile }));
  const { main, readBoundedFile } = await cli;
  let err = '';
  let out = '';
  let onOut = (): void => {};
  const waiting: ((signal: NodeJS.Signals) => void)[] = [];
  const signals: NodeJS.Signals[] = [];
  const io: CliIO = {
    cwd: process.cwd(),
    readFile: (path, maxBytes) => readBoundedFile(resolve(path), maxBytes),
    stdout: (text) => {
      out += text;
      onOut();
    },
    stderr: (text) => {
      err = (err + text).slice(-20_000);
    },
    until: () => new Promise((resolve) => {
      const next = signals.shift();
      if (next !== undefined) resolve(next);
      else waiting.push(resolve);
    }),
  };
  const exited = main(args, io).then((code) => `exit ${code}`, (error: unknown) => `threw ${String(error)}`);
  const handle: InProcess = {
    pid: undefined,
    kill(signal = 'SIGTERM') {
      if (signal === 'SIGCONT') return true;
      if (signal !== 'SIGTERM' && signal !== 'SIGINT') throw new Error(`${name} runs in this process: ${signal} needs a child process (startCli's { process: true })`);
      const waiter = waiting.shift();
      if (waiter !== undefined) waiter(signal);
      else signals.push(signal);
      return true;
    },
  };
  const child: Child = { name, process: handle, stderr: () => err, exited };
  running.add(child);
  void exited.then(() => running.delete(child));
  const match = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not print its address within ${timeoutMs} ms; stderr: ${err}`)), timeoutMs);
    onOut = () => {
      const m = ready.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        onOut = () => {};
        resolve(m[1] ?? m[0]);
      }
    };
    void exited.then((how) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${how}) before it was ready; stderr: ${err}`));
    });
  });
  return { child, match };
}

/** After the file's tests: stops reading events, kills every child, removes `dir`. */
export function cleanUpAfterAll(dir: string, sse: AbortController): void {
  afterAll(async () => {
    sse.abort();
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  });
}

/**
 * Kills every child still running (continued first, in case it was stopped) and waits for them; an
 * in-process one gets SIGTERM, and a second (stop without draining) if it is not done in a second.
 */
export async function stopAll(): Promise<void> {
  const children = [...running];
  for (const c of children) {
    if (c.process.pid === undefined) {
      c.process.kill('SIGTERM');
      const again = setTimeout(() => c.process.kill('SIGTERM'), 1000);
      void c.exited.then(() => clearTimeout(again));
      continue;
    }
    c.process.kill('SIGCONT');
    c.process.kill('SIGKILL');
  }
  await Promise.all(children.map((c) => Promise.race([c.exited, new Promise((r) => setTimeout(r, 5000))])));
}

/** One server-sent event as received, with the time it arrived. */
export interface ReceivedEvent {
  readonly type: string;
  readonly data: Record<string, unknown>;
  readonly receivedAt: number;
}

/** Reads `url` as an SSE stream into `into` until `signal` aborts (`headers` sent too: a bearer, say). */
export async function collectEvents(url: string, into: ReceivedEvent[], signal: AbortSignal, headers: Record<string, string> = {}): Promise<void> {
  const response = await fetch(url, { signal, headers: { accept: 'text/event-stream', ...headers } });
  if (!response.ok || response.body === null) throw new Error(`GET ${url}: ${response.status}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const type = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (type !== undefined && data !== undefined) into.push({ type, data: JSON.parse(data) as Record<string, unknown>, receivedAt: Date.now() });
        }
      }
    } catch {
      // aborted at the end of the test
    }
  })();
}

/** Polls `check` every `everyMs` until it returns a value (not undefined) or `timeoutMs` passes. */
export async function waitFor<T>(what: string | (() => string), check: () => Promise<T | undefined> | T | undefined, timeoutMs: number, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Parses Prometheus text into `name{labels}` → value. */
export function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}
