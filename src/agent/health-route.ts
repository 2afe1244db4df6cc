/** `GET /v1/health` on the agent: what it runs, what waits, what its engine holds. */
import type { FastifyInstance } from 'fastify';
import type { HeartbeatBody } from '../wire/member-protocol.js';
import type { SessionDrops } from './session-drops.js';
import type { StageEngine } from './stage-engine.js';
import type { StageSlots } from './stage-slots.js';

/** The agent's health answer. */
export interface AgentHealth {
  readonly id: string;
  /** The engine's kind: `digest`, `reference`, … */
  readonly engine: string;
  /** Sessions the engine holds caches of. */
  readonly sessions: number;
  /** Tokens cached over every session (steps, for the digest engine). */
  readonly cachedTokens: number;
  readonly memoryBytes: number;
  /** Bytes of the sessions' KV caches, for an engine that keeps them (the reference engine). */
  readonly kvBytes?: number;
  /** Stage calls holding a slot. */
  readonly running: number;
  /** Stage calls waiting for one. */
  readonly queued: number;
  /** Stage calls in progress (waiting or running). */
  readonly calls: number;
  /** Drops received. */
  readonly drops: number;
}

/** Registers `GET /v1/health`. */
export function registerHealthRoute(app: FastifyInstance, id: string, engine: StageEngine, slots: StageSlots, drops: SessionDrops): void {
  app.get('/v1/health', async (): Promise<AgentHealth> => {
    const held = engine.holds();
    return { id, engine: engine.kind, sessions: held.sessions, cachedTokens: held.cachedTokens, memoryBytes: held.memoryBytes, ...(held.kvBytes !== undefined ? { kvBytes: held.kvBytes } : {}), running: slots.running, queued: slots.queued, calls: drops.runningCalls(), drops: drops.drops };
  });
}

/** What a heartbeat reports of the engine: its KV bytes, when it keeps a KV cache. */
export function heartbeatReport(engine: StageEngine): HeartbeatBody {
  const kvBytes = engine.holds().kvBytes;
  return kvBytes === undefined ? {} : { kvBytes };
}
