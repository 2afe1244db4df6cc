/**
 * A real `nats-server` with JetStream for the replication tests: started on a free loopback port
 * with a temporary store, waited for until it accepts connections, stopped (and its store
 * removed) after. `restart()` stops it and starts it again on the same port and store, as a
 * server restart does. Provisioned by scripts/ensure-nats-server.sh (Debian's package).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The nats-server binary: $NATS_SERVER, else the Debian package's, else the PATH's. */
function binary(): string {
  if (process.env['NATS_SERVER'] !== undefined) return process.env['NATS_SERVER'];
  return existsSync('/usr/sbin/nats-server') ? '/usr/sbin/nats-server' : 'nats-server';
}

/** A free loopback port (the OS picks one, then it is released for the server to take). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Resolves once a TCP connection to the port succeeds; rejects after `timeoutMs`. */
async function accepting(port: number, timeoutMs: number, exited: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const why = exited();
    if (why !== undefined) throw new Error(why);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nats-server did not accept connections on port ${port} within ${timeoutMs} ms`);
    await delay(50);
  }
}

export class NatsServer {
  private child: ChildProcess | undefined;
  private stderr = '';

  private constructor(
    readonly port: number,
    readonly storeDir: string,
    /** Extra configuration (nats-server's config syntax: `tls { … }`, `authorization { … }`), given as a config file. */
    private readonly config?: string,
  ) {}

  /** Starts a server on a free port with a fresh temporary JetStream store (and `config`, e.g. TLS and users, if given). */
  static async start(config?: string): Promise<NatsServer> {
    const server = new NatsServer(await freePort(), mkdtempSync(join(tmpdir(), 'hecate-nats-')), config);
    await server.launch();
    return server;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  private async launch(): Promise<void> {
    this.stderr = '';
    const args = ['-js', '-a', '127.0.0.1', '-p', String(this.port), '-sd', this.storeDir];
    if (this.config !== undefined) {
      const file = join(this.storeDir, 'server.conf');
      writeFileSync(file, this.config);
      args.push('-c', file);
    }
    const child = spawn(binary(), args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child = child;
    let exit: string | undefined;
    child.stderr?.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString()).slice(-4000);
    });
    child.once('error', (e) => (exit = `nats-server could not start (${binary()}): ${e.message}; run scripts/ensure-nats-server.sh`));
    child.once('exit', (code) => (exit ??= `nats-server exited with code ${String(code)}: ${this.stderr}`));
    await accepting(this.port, 10_000, () => exit);
  }

  /** Stops the server (SIGTERM, then SIGKILL after 5 s); the store stays. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await gone;
    clearTimeout(timer);
  }

  /** Starts it again after {@link NatsServer.stop}, on the same port and store. */
  async resume(): Promise<void> {
    if (this.child === undefined) await this.launch();
  }

  /** Stops and starts it again on the same port and store. */
  async restart(): Promise<void> {
    await this.stop();
    await this.launch();
  }

  /** Stops it and removes its store. */
  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.storeDir, { recursive: true, force: true });
  }
}

/**
 * A TCP relay in front of the server, to cut one replica off NATS and let it back: `cut()`
 * destroys its connections and refuses new ones; `heal()` accepts again.
 */
export class TcpCut {
  private readonly sockets = new Set<Socket>();
  private open = true;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async to(targetPort: number): Promise<TcpCut> {
    let relay: TcpCut | undefined;
    const server = createServer((client) => {
      if (relay === undefined || !relay.open) {
        client.destroy();
        return;
      }
      const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
      const pair = [client, upstream];
      for (const s of pair) {
        relay.sockets.add(s);
        s.on('error', () => pair.forEach((x) => x.destroy()));
        s.on('close', () => {
          relay?.sockets.delete(s);
          pair.forEach((x) => x.destroy());
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
    relay = new TcpCut(server, port);
    return relay;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  cut(): void {
    this.open = false;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  heal(): void {
    this.open = true;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
