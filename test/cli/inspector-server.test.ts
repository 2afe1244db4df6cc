import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { createWebSocketReceiver, type StatelyInspectionEvent } from '@statelyai/inspect';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startInspectorServer, type InspectorServer } from '../../src/cli/inspector-server.js';
import { BIN, cli } from './run-cli.js';

// `npm test` builds first (pretest); in a manual run, `npm run build` before vitest.
const SIM = ['swarm-sim', '--topology', 'examples/swarm.json', '--kill', 'gpu', '--pipelines', '2', '--seed', '1', '--no-revive'];

const servers: InspectorServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

/** Whether a TCP connection to host:port is accepted (true) or refused (false). */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** This machine's own addresses that are not loopback. */
function outsideAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flatMap((list) => list ?? [])
    .filter((a) => !a.internal && a.family === 'IPv4')
    .map((a) => a.address);
}

describe('startInspectorServer', () => {
  it('binds 127.0.0.1 unless asked otherwise: refused on every other address of this machine', async () => {
    const server = await startInspectorServer({ port: 0 });
    servers.push(server);
    expect(server.address.address).toBe('127.0.0.1');
    expect(server.url).toBe(`ws://127.0.0.1:${server.address.port}`);
    expect(await accepts('127.0.0.1', server.address.port)).toBe(true);
    for (const address of outsideAddresses()) expect(await accepts(address, server.address.port), address).toBe(false);
  });

  it('binds the host it is given', async () => {
    const server = await startInspectorServer({ host: '127.0.0.2', port: 0 });
    servers.push(server);
    expect(server.address.address).toBe('127.0.0.2');
    expect(server.url).toBe(`ws://127.0.0.2:${server.address.port}`);
    expect(await accepts('127.0.0.1', server.address.port)).toBe(false);
  });

  it('receives a swarm-sim --inspect run and relays it to a createWebSocketReceiver client, live and replayed', async () => {
    const got: unknown[] = [];
    const server = await startInspectorServer({ port: 0, onEvent: (e) => void got.push(e) });
    servers.push(server);
    const live: StatelyInspectionEvent[] = [];
    const receiver = createWebSocketReceiver({ server: server.url });
    const subscription = receiver.subscribe((e) => void live.push(e));
    // The receiver listens once its socket is open: wait until a probe sent through the server reaches it.
    const probe = new WebSocket(server.url);
    await new Promise((resolve, reject) => probe.once('open', resolve).once('error', reject));
    for (let i = 0; i < 100 && !live.some((e) => (e as { type: string }).type === 'probe'); i++) {
      probe.send(JSON.stringify({ type: 'probe' }));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    probe.close();
    expect(live.some((e) => (e as { type: string }).type === 'probe')).toBe(true);
    live.length = 0;
    got.length = 0;
    const run = await cli(...SIM, '--inspect', server.url);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    for (let i = 0; i < 50 && !live.some(isNodeDown); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    subscription.unsubscribe();
    expect(got.some(isNodeDown)).toBe(true);
    const runOnly = (list: unknown[]) => list.filter((e) => (e as { type: string }).type !== 'probe');
    expect(runOnly(live)).toEqual(runOnly(got));
    expect(new Set(live.map((e) => e.type))).toEqual(new Set(['@xstate.actor', '@xstate.event', '@xstate.snapshot']));
    expect(live.some(isNodeDown)).toBe(true);
    // A receiver that connects after the run is sent the last events.
    const late: StatelyInspectionEvent[] = [];
    const after = createWebSocketReceiver({ server: server.url }).subscribe((e) => void late.push(e));
    for (let i = 0; i < 50 && late.length < 200; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    after.unsubscribe();
    expect(late.length).toBe(Math.min(200, server.received()));
    expect(late.at(-1)).toEqual(got.at(-1));
  });
});

function isNodeDown(e: unknown): boolean {
  const event = e as { type?: string; event?: { type?: string } };
  return event.type === '@xstate.event' && event.event?.type === 'node.down';
}

describe('hecate-node inspector', () => {
  it('listens on 127.0.0.1, prints every event of a swarm-sim --inspect run as a JSON line, stops on SIGINT', async () => {
    const child = spawn(process.execPath, [BIN, 'inspector', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => void (stdout += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no listening line; stderr: ${stderr}`)), 10_000);
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        const m = /listening on (ws:\/\/\S+) \(this machine only\)/.exec(stderr);
        if (m?.[1] !== undefined) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
    });
    try {
      expect(url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
      const run = await cli(...SIM, '--inspect', url);
      expect(run.code).toBe(0);
      for (let i = 0; i < 50 && !stdout.includes('"node.down"'); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited).toBe(0);
    const lines = stdout.trim().split('\n');
    const events = lines.map((l) => JSON.parse(l) as { type: string });
    expect(events.some(isNodeDown)).toBe(true);
    expect(stderr).toContain(`SIGINT: stopped after ${events.length} events`);
  });

  it('says in its help that it binds 127.0.0.1 and opens no browser', async () => {
    const help = await cli('inspector', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('default 127.0.0.1');
    expect(help.stdout).toContain('No page, no browser, no network');
    expect(help.stdout).not.toMatch(/https?:/);
  });
});
