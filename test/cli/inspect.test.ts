import { createServer, type AddressInfo } from 'node:net';
import type { StatelyInspectionEvent } from '@statelyai/inspect';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { isLoopbackHost, parseInspectUrl } from '../../src/cli/inspect.js';
import { cli } from './run-cli.js';

// `npm test` builds first (pretest); in a manual run, `npm run build` before vitest.
const SIM = ['swarm-sim', '--topology', 'examples/swarm.json', '--kill', 'gpu', '--pipelines', '2', '--seed', '1'];

/** A WebSocket inspector on 127.0.0.1 that keeps every message it receives, per connection. */
async function localInspector(): Promise<{ url: string; events: StatelyInspectionEvent[]; closed: Promise<void>; stop(): Promise<void> }> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const events: StatelyInspectionEvent[] = [];
  const closed = new Promise<void>((resolve) => {
    server.on('connection', (socket) => {
      socket.on('message', (data) => events.push(JSON.parse(data.toString()) as StatelyInspectionEvent));
      socket.on('close', () => resolve());
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}`,
    events,
    closed,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A snapshot event of a machine actor: its snapshot carries `value` and `context`. */
type Snapshot = Omit<Extract<StatelyInspectionEvent, { type: '@xstate.snapshot' }>, 'snapshot'> & { snapshot: { value: unknown; context: unknown } };
type EventEvent = Extract<StatelyInspectionEvent, { type: '@xstate.event' }>;
type ActorEvent = Extract<StatelyInspectionEvent, { type: '@xstate.actor' }>;

const stops: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

describe('hecate-node swarm-sim --inspect', () => {
  it('streams the run to a local WebSocket inspector: node.down, then the status change, in order', async () => {
    const inspector = await localInspector();
    stops.push(inspector.stop);
    const run = await cli(...SIM, '--inspect', inspector.url);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect((JSON.parse(run.stdout) as { steps: unknown[] }).steps.length).toBeGreaterThanOrEqual(3);
    await inspector.closed;
    const events = inspector.events;

    // Every message is a Stately inspection event.
    for (const e of events) {
      expect(['@xstate.actor', '@xstate.event', '@xstate.snapshot']).toContain(e.type);
      expect(typeof e.sessionId).toBe('string');
      expect(typeof e._version).toBe('string');
    }
    const actors = events.filter((e): e is ActorEvent => e.type === '@xstate.actor');
    const swarm = actors.find((a) => a.name === 'swarm');
    expect(swarm).toBeDefined();
    const swarmId = swarm?.sessionId;
    // The node actors joined the Swarm's system and its inspection.
    const gpu = actors.find((a) => a.name === 'node:gpu');
    expect(gpu?.parentId).toBe(swarmId);
    expect(actors.filter((a) => a.parentId === swarmId).map((a) => a.name)).toEqual(expect.arrayContaining(['node:gpu', 'node:desktop', 'node:gpu-2']));

    const swarmStatus = (e: StatelyInspectionEvent): string | undefined =>
      e.type === '@xstate.snapshot' && e.sessionId === swarmId ? String((e as unknown as Snapshot).snapshot.value) : undefined;
    const down = events.findIndex((e) => e.type === '@xstate.event' && e.sessionId === swarmId && (e as EventEvent).event.type === 'node.down');
    expect(down, 'the node.down event sent to the Swarm').toBeGreaterThan(-1);
    expect((events[down] as EventEvent).event).toMatchObject({ type: 'node.down', nodeId: 'gpu' });
    const before = events.slice(0, down).map(swarmStatus).filter((s) => s !== undefined);
    expect(before.at(-1)).toBe('healthy');
    const after = events.findIndex((e, i) => i > down && swarmStatus(e) !== undefined);
    expect(swarmStatus(events[after] as StatelyInspectionEvent)).toBe('degraded');
    expect((events[after] as unknown as Snapshot).event).toMatchObject({ type: 'node.down', nodeId: 'gpu' });
    // The rescue was computed from the state before the mark: it recovers the route that used gpu.
    const context = (events[after] as unknown as Snapshot).snapshot.context as {
      outcome?: { kind: string; nodeId: string; recoveries: { from: { stages: { nodeId: string }[] } }[] };
      members?: Record<string, { profile: { id: string }; slot: number }>;
    };
    expect(context.outcome?.kind).toBe('rescue');
    expect(context.outcome?.nodeId).toBe('gpu');
    expect(context.outcome?.recoveries[0]?.from.stages.map((s) => s.nodeId)).toContain('gpu');
    // The members table travels as its entries: data, no actor reference in the context.
    expect(context.members?.['gpu']).toEqual({ profile: expect.objectContaining({ id: 'gpu' }), slot: 0 });
    // The gpu actor went down after the Swarm decided, and the run ends stopped.
    const gpuDown = events.findIndex((e) => e.type === '@xstate.snapshot' && e.sessionId === gpu?.sessionId && JSON.stringify((e as unknown as Snapshot).snapshot.value) === '{"down":"manual"}');
    expect(gpuDown).toBeGreaterThan(down);
    expect(events.map(swarmStatus).filter((s) => s !== undefined).at(-1)).toBe('stopped');
    // What the Swarm emitted reaches the inspector as events from the Swarm to the orchestrator, in order.
    const emitted = events.filter((e): e is EventEvent => e.type === '@xstate.event' && e.sessionId === 'orchestrator');
    expect(emitted.every((e) => e.sourceId === swarmId)).toBe(true);
    const downEmitted = emitted.find((e) => e.event.type === 'node.down');
    expect(downEmitted?.event).toMatchObject({ type: 'node.down', nodeId: 'gpu', cause: 'manual', rescue: { nodeId: 'gpu', status: 'degraded' } });
    expect(emitted.map((e) => e.event.type)).toEqual(expect.arrayContaining(['node.down', 'status.changed']));
    expect(emitted.at(-1)?.event).toEqual({ type: 'status.changed', status: 'stopped' });
    expect(events.indexOf(downEmitted as EventEvent)).toBeGreaterThan(down);
    expect(actors.some((a) => a.sessionId === 'orchestrator')).toBe(true);
  });

  it('refuses an address other than loopback unless --inspect-remote asks for it, printing nothing', async () => {
    const r = await cli(...SIM, '--inspect', 'ws://192.0.2.10:8080');
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('not a loopback address');
    expect(r.stderr).toContain('--inspect-remote');
    expect(parseInspectUrl('ws://192.0.2.10:8080', true).hostname).toBe('192.0.2.10');
  });

  it('exits 2 with the URL named when no inspector listens, and runs nothing', async () => {
    const port = await freePort();
    const r = await cli(...SIM, '--inspect', `ws://127.0.0.1:${port}`);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`cannot connect to ws://127.0.0.1:${port}/`);
  });

  it('rejects a URL that is not ws:// or wss://, and --inspect-remote alone', async () => {
    const [http, alone] = await Promise.all([cli(...SIM, '--inspect', 'http://127.0.0.1:8080'), cli(...SIM, '--inspect-remote')]);
    expect(http.code).toBe(2);
    expect(http.stderr).toContain('ws:// or wss://');
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain('--inspect-remote only makes sense with --inspect');
  });
});

describe('isLoopbackHost', () => {
  it('accepts loopback names and addresses only', () => {
    for (const host of ['localhost', '127.0.0.1', '127.8.9.10', '[::1]', '::1', '[::ffff:127.0.0.1]']) expect(isLoopbackHost(host), host).toBe(true);
    // Only literal loopback: a name under .localhost goes through the resolver.
    for (const host of ['0.0.0.0', '10.0.0.1', '192.168.1.2', 'example.com', 'localhost.example.com', '[::]', '[2001:db8::1]', '128.0.0.1', 'api.localhost', 'evil.localhost', 'localhost.']) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
