/**
 * A real `nats-server` with JetStream for the serve tests: started on a free loopback port with a
 * temporary store, stopped (and its store removed) at the end, whatever happened. The binary is
 * `$NATS_SERVER`, else `nats-server` on the PATH (scripts/provision.mjs installs it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A running nats-server. */
export interface NatsServer {
  /** `nats://127.0.0.1:PORT` */
  readonly url: string;
  readonly process: ChildProcess;
  /** Stops it (SIGTERM, then SIGKILL after 5 s) and removes its store. */
  stop(): Promise<void>;
}

/** A free TCP port on loopback (free when asked: the server binds it right after). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Starts `nats-server -js` on loopback and resolves once it says it is ready. */
export async function startNatsServer(timeoutMs = 15_000): Promise<NatsServer> {
  const store = mkdtempSync(join(tmpdir(), 'hecate-nats-'));
  const port = await freePort();
  const bin = process.env['NATS_SERVER'] ?? 'nats-server';
  const proc = spawn(bin, ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', store], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<string>((resolve) => proc.once('exit', (code, signal) => resolve(signal ?? `exit ${code}`)));
  let log = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`nats-server did not get ready within ${timeoutMs} ms: ${log}`)), timeoutMs);
    const onData = (chunk: Buffer): void => {
      log = (log + chunk.toString('utf8')).slice(-10_000);
      if (log.includes('Server is ready')) {
        clearTimeout(timer);
        resolve();
      }
    };
    proc.stderr?.on('data', onData);
    proc.stdout?.on('data', onData);
    proc.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ${bin} (install nats-server, or set NATS_SERVER): ${error.message}`));
    });
    void exited.then((how) => {
      clearTimeout(timer);
      reject(new Error(`nats-server exited (${how}) before it was ready: ${log}`));
    });
  });
  return {
    url: `nats://127.0.0.1:${port}`,
    process: proc,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(store, { recursive: true, force: true });
    },
  };
}
