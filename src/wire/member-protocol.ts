/** The wire format of agents joining, heartbeating and leaving the orchestrator. */
import { ServeError } from './serve-error.js';

/** JSON schema of {@link JoinBody}. */
export const joinBodySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'memoryGb', 'url'],
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9._:-]+$' },
    memoryGb: { type: 'number', exclusiveMinimum: 0, maximum: 1_000_000 },
    score: { type: 'number', exclusiveMinimum: 0, maximum: 1_000_000 },
    latencyMs: { type: 'number', minimum: 0, maximum: 600_000 },
    slots: { type: 'integer', minimum: 1, maximum: 1_000_000 },
    url: { type: 'string', minLength: 8, maxLength: 500, pattern: '^https?://' },
  },
} as const;

/** `POST /v1/nodes`: an agent joins (or joins again after a restart). */
export interface JoinBody {
  readonly id: string;
  readonly memoryGb: number;
  readonly score?: number;
  readonly latencyMs?: number;
  /** Stage calls it serves at once: the swarm's admission counts them (docs/admission.md). */
  readonly slots?: number;
  readonly url: string;
}

/** `POST /v1/nodes/:id/heartbeat`'s body: what the agent reports of itself (all optional; an empty body is a bare heartbeat). */
export interface HeartbeatBody {
  /** Bytes its engine's KV caches hold now (docs/engine.md, "Join and heartbeat"). */
  readonly kvBytes?: number;
}

/**
 * A heartbeat's body, checked: none, or an object whose `kvBytes` (when given) is a non-negative
 * integer; other fields are ignored (a newer agent's).
 * @throws {ServeError} `InvalidRequest` 400 naming `kvBytes`
 */
export function readHeartbeat(body: unknown): HeartbeatBody {
  if (body === undefined || body === null || typeof body !== 'object') return {};
  const kvBytes = (body as { kvBytes?: unknown }).kvBytes;
  if (kvBytes === undefined) return {};
  if (typeof kvBytes !== 'number' || !Number.isSafeInteger(kvBytes) || kvBytes < 0) throw new ServeError('InvalidRequest', 400, `kvBytes: expected the bytes of KV cache held, a non-negative integer, got ${JSON.stringify(kvBytes)}`, { field: 'kvBytes' });
  return { kvBytes };
}

/** JSON schema of the `:id` of `/v1/nodes/:id/...`. */
export const nodeParamsSchema = { type: 'object', required: ['id'], properties: { id: { type: 'string', minLength: 1, maxLength: 200 } } } as const;

/**
 * The largest body of a join, heartbeat or leave (bytes): a join with every field at its longest,
 * escaped, fits many times; anything longer is refused from its `content-length` unread.
 */
export const MEMBER_BODY_LIMIT = 16 * 1024;

/**
 * `GET /v1/audience` (unsigned): what a member signs its joins, heartbeats and leaves for, the
 * same on every orchestrator of one swarm (docs/engine.md, "Signing"): `{ audience, signing }`.
 */
export const AUDIENCE_PATH = '/v1/audience';

/** `GET /v1/audience`'s answer. */
export interface AudienceAnswer {
  readonly audience: string;
  /** The signing protocol (request-signing.ts `SIGNING_PROTOCOL`). */
  readonly signing: number;
}
