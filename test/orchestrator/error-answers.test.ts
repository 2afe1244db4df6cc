/**
 * Every code of every library error class is answered with a deliberate HTTP status, from one
 * table (src/orchestrator/error-answers.ts) that docs/serve.md shows row for row; a model that only a
 * degraded route serves is a 503, not a 500.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createSwarm, PlanError, RoutingError, SessionError, SwarmError, type NodeProfile, type PlanErrorCode, type RoutingErrorCode, type SessionErrorCode, type SwarmErrorCode } from '../../src/index.js';
import { ReplicationError, type ReplicationErrorCode } from '../../src/replication/replication-error.js';
import { asServeError, libraryErrorAnswer, LIBRARY_ERROR_ANSWERS } from '../../src/orchestrator/error-answers.js';
import { Generation } from '../../src/orchestrator/generation.js';
import { ManualClock } from '../../src/runtime/clock.js';
import { createHttpApp } from '../../src/net/http-app.js';
import { NodeRegistry } from '../../src/orchestrator/node-registry.js';
import { ServeError } from '../../src/wire/serve-error.js';
import { IdempotencyError, type IdempotencyErrorCode } from '../../src/orchestrator/idempotency-error.js';
import { ServeMetrics } from '../../src/orchestrator/serve-metrics.js';

// Every code of each union, written out: a code added to a union fails to compile here until listed.
const ROUTING: Record<RoutingErrorCode, true> = { UnknownModel: true, NoHealthyPipeline: true, Unrecoverable: true, InvalidRequest: true, Saturated: true, DeadlineExceeded: true, Aborted: true };
const SESSION: Record<SessionErrorCode, true> = { InvalidInput: true, Closed: true, StepInProgress: true, RetryBudgetExhausted: true, DeadlineExceeded: true, Aborted: true, Unrecoverable: true, HistoryTruncated: true, ReplayOutputsMissing: true, Disputed: true };
const SWARM: Record<SwarmErrorCode, true> = { UnknownNode: true, DuplicateNode: true, Stopped: true, BadTelemetry: true, InvalidInput: true, UnknownLease: true };
const PLAN: Record<PlanErrorCode, true> = { InvalidInput: true, InsufficientCapacity: true, InvalidPlan: true };
const REPLICATION: Record<ReplicationErrorCode, true> = { InvalidInput: true, Disconnected: true, Closed: true, NoGenesis: true, BadLog: true, UnknownVersion: true, Trimmed: true, Refused: true, Rejected: true };
const IDEMPOTENCY: Record<IdempotencyErrorCode, true> = { InvalidKey: true, InProgress: true, KeyReused: true, ClaimLost: true, Unavailable: true, Full: true };

type ErrorClass = new (code: never, message: string) => Error & { code: string };
const CLASSES: readonly [string, ErrorClass, readonly string[]][] = [
  ['RoutingError', RoutingError as ErrorClass, Object.keys(ROUTING)],
  ['SessionError', SessionError as ErrorClass, Object.keys(SESSION)],
  ['SwarmError', SwarmError as ErrorClass, Object.keys(SWARM)],
  ['PlanError', PlanError as ErrorClass, Object.keys(PLAN)],
  ['ReplicationError', ReplicationError as ErrorClass, Object.keys(REPLICATION)],
  ['IdempotencyError', IdempotencyError as ErrorClass, Object.keys(IDEMPOTENCY)],
];
const every = CLASSES.flatMap(([name, cls, codes]) => codes.map((code) => [name, cls, code] as const));

/** The codes a 500 is deliberate for: they can only mean a bug of the orchestrator. */
const ORCHESTRATOR_BUGS = new Set(['SessionError InvalidInput', 'SessionError StepInProgress', 'ReplicationError InvalidInput', 'ReplicationError BadLog']);

describe('the library error table', () => {
  it('has exactly the codes of each union, no more', () => {
    for (const [name, , codes] of CLASSES) expect(Object.keys(LIBRARY_ERROR_ANSWERS[name as keyof typeof LIBRARY_ERROR_ANSWERS]).sort()).toEqual([...codes].sort());
  });

  it.each(every)('%s %s: a deliberate status, the ServeError carrying it, the library code first in its message', (name, cls, code) => {
    const error = new cls(code as never, 'what happened');
    const answer = libraryErrorAnswer(error);
    expect(answer).toBeDefined();
    const status = answer?.status as number;
    expect([400, 404, 409, 429, 500, 502, 503, 504]).toContain(status);
    expect(status === 500).toBe(ORCHESTRATOR_BUGS.has(`${name} ${code}`));
    const served = asServeError(error) as ServeError;
    expect(served).toBeInstanceOf(ServeError);
    expect(served.status).toBe(status);
    expect(served.code).toBe(answer?.code);
    expect(served.message).toBe(`${code}: what happened`);
    expect(served.cause).toBe(error);
  });

  it('no route and no live cover are 503, never 500', () => {
    for (const error of [new RoutingError('NoHealthyPipeline', 'x'), new RoutingError('Unrecoverable', 'x'), new SessionError('Unrecoverable', 'x'), new SessionError('HistoryTruncated', 'x')]) {
      expect((asServeError(error) as ServeError).status).toBe(503);
    }
    expect((asServeError(new RoutingError('UnknownModel', 'x')) as ServeError).field).toBe('model');
  });

  it('leaves any other error as it is', () => {
    const other = new TypeError('boom');
    expect(asServeError(other)).toBe(other);
    const served = new ServeError('NoSwarm', 503, 'no swarm yet');
    expect(asServeError(served)).toBe(served);
    const forged = Object.assign(new SessionError('Closed', 'x'), { code: 'toString' });
    expect(asServeError(forged)).toBe(forged); // an unknown code is no row (an inherited name neither)
  });
});

describe('docs/serve.md', () => {
  it('shows the same table, row for row', () => {
    const doc = readFileSync(new URL('../../docs/serve.md', import.meta.url), 'utf8');
    const rows = new Map<string, string>();
    for (const match of doc.matchAll(/^\| `(\w+Error)` `(\w+)` \| (\d{3}) \| `(\w+)`( \(field `(\w+)`\))? \|/gm)) {
      rows.set(`${match[1]} ${match[2]}`, `${match[3]} ${match[4]}${match[6] !== undefined ? ` ${match[6]}` : ''}`);
    }
    const table = new Map<string, string>();
    for (const [name, cls, code] of every) {
      const a = libraryErrorAnswer(new cls(code as never, '')) as { status: number; code: string; field?: string };
      table.set(`${name} ${code}`, `${a.status} ${a.code}${a.field !== undefined ? ` ${a.field}` : ''}`);
    }
    expect(rows).toEqual(table);
  });
});

describe('generate', () => {
  const profiles: NodeProfile[] = [
    { id: 'a', memoryGb: 6 },
    { id: 'b', memoryGb: 6 },
  ];

  it('answers 503 for a model only a degraded route serves (it was a 500 Internal)', async () => {
    const swarm = createSwarm(profiles, { models: [{ id: 'base', layers: 12, pipelines: 1 }], allowDegraded: true }, { seed: 1 });
    swarm.markDown('b'); // its layers are held by no one else: the route is degraded
    expect(swarm.route().degraded).toBe(true);
    const registry = new NodeRegistry();
    const metrics = new ServeMetrics({ nodesByState: () => new Map(), inflightByNode: () => new Map(), routeCostByModel: () => new Map(), leases: () => 0 });
    let error: unknown;
    try {
      await new Generation({ swarm, request: { model: 'base', prompt: 'hello', steps: 1 }, calls: { registry, metrics }, clock: new ManualClock(0) }).run();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ServeError);
    expect((error as ServeError).status).toBe(503);
    expect((error as ServeError).code).toBe('SessionFailed');
    expect((error as ServeError).message).toMatch(/^Unrecoverable: model "base" has only a degraded route/);
    expect(swarm.inFlight()).toBe(0);
    swarm.stop();
  });

  it('answers 400 on "model" for an unknown model, 503 NoRoute when nothing is left', async () => {
    const swarm = createSwarm(profiles, { models: [{ id: 'base', layers: 12, pipelines: 1 }], allowDegraded: false }, { seed: 1 });
    const registry = new NodeRegistry();
    const metrics = new ServeMetrics({ nodesByState: () => new Map(), inflightByNode: () => new Map(), routeCostByModel: () => new Map(), leases: () => 0 });
    const run = async (model: string) => {
      try {
        await new Generation({ swarm, request: { model, prompt: 'hello', steps: 1 }, calls: { registry, metrics }, clock: new ManualClock(0) }).run();
      } catch (e) {
        return e as ServeError;
      }
      throw new Error('expected a ServeError');
    };
    const unknown = await run('nope');
    expect([unknown.status, unknown.code, unknown.field]).toEqual([400, 'InvalidRequest', 'model']);
    swarm.markDown('b');
    const none = await run('base');
    expect([none.status, none.code]).toEqual([503, 'NoRoute']);
    swarm.stop();
  });
});

describe('the HTTP app', () => {
  it('answers a library error that reaches it from the table, and anything else 500 Internal', async () => {
    const app = createHttpApp(undefined, asServeError);
    app.get('/duplicate', () => {
      throw new SwarmError('DuplicateNode', 'node "a" is listed twice');
    });
    app.get('/stopped', () => {
      throw new SwarmError('Stopped', 'the swarm is stopped');
    });
    app.get('/bug', () => {
      throw new TypeError('boom');
    });
    const body = async (url: string) => {
      const reply = await app.inject({ method: 'GET', url });
      return [reply.statusCode, reply.json()] as const;
    };
    expect(await body('/duplicate')).toEqual([409, { error: { code: 'Conflict', message: 'DuplicateNode: node "a" is listed twice' } }]);
    expect(await body('/stopped')).toEqual([503, { error: { code: 'NoSwarm', message: 'Stopped: the swarm is stopped' } }]);
    expect(await body('/bug')).toEqual([500, { error: { code: 'Internal', message: 'TypeError: boom' } }]);
    await app.close();
  });
});
