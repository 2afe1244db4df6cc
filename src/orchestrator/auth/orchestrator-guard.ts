/**
 * The orchestrator's checks (docs/security.md, "Roles"): joins, heartbeats and leaves must be
 * signed with the swarm secret (401 otherwise) and by the agent's own key, and an id belongs to
 * the key of its first admitted join (409 for any other, whatever the URL), each checked from the
 * headers before the body is read as far as they show it; the operator's calls
 * (`DELETE /v1/nodes/:id/key`, `DELETE /v1/nodes/:id`, `DELETE /v1/nodes?pattern=`) need the
 * operator token as a bearer, never the swarm secret; an id's own key may free its binding
 * (`DELETE /v1/nodes/:id/key` signed like a leave); `POST /v1/generate` needs the client token
 * when one is configured; `GET /v1/status` and `/v1/events` show agents' addresses to the
 * operator only. A member's request is signed for the swarm's audience (`GET /v1/audience`): one
 * name for every orchestrator of a replicated swarm, whose nonces they share (a request taken by
 * one is refused by all, restarted or not); a new random one each start of an orchestrator alone.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { systemClock } from '../../runtime/clock.js';
import type { TimeSource } from '../../runtime/types.js';
import { ServeError } from '../../wire/serve-error.js';
import { AGENT_KEY_HEADERS, verifyAgentSignature } from '../../wire/agent-key.js';
import { KeyBindings } from './key-bindings.js';
import { NonceCache } from '../../wire/nonce-cache.js';
import { rawBody } from '../../net/raw-body.js';
import { AUDIENCE_PATH, type AudienceAnswer } from '../../wire/member-protocol.js';
import { checkSignatureHeaders, DEFAULT_MAX_SKEW_MS, sameSecret, SIGNATURE_HEADERS, SIGNING_PROTOCOL, verifySignature, type SignatureWindow, type SignedParts } from '../../wire/request-signing.js';

/** The orchestrator's credentials. */
export interface OrchestratorAuth {
  /** The swarm secret: agents sign their joins, heartbeats and leaves with it; it signs the stage calls. */
  readonly secret: Uint8Array;
  /**
   * The operator's token (`--operator-token-file`): its bearer alone may make the operator's calls.
   * @defaultValue none: the operator's calls are refused (401)
   */
  readonly operatorToken?: Uint8Array;
  /** When set, `POST /v1/generate` needs `authorization: Bearer <token>`. */
  readonly clientToken?: Uint8Array;
  /** The tokens of the client classes (`--classes`, docs/serve.md): each is a client token too. */
  readonly classTokens?: readonly string[];
  /**
   * Checks the requests' timestamps: wall time, like the agents' (not the orchestrator's clock,
   * which a test may hold still). @defaultValue systemClock
   */
  readonly clock?: TimeSource;
  /** @defaultValue 30000 */
  readonly maxSkewMs?: number;
  /**
   * Keeps the id → key bindings in this file, so they outlive a restart. @defaultValue none:
   * in memory, for as long as the orchestrator runs
   */
  readonly bindingsFile?: string;
}

/**
 * Where the id → key bindings live: the orchestrator's own ({@link KeyBindings}, its file), or,
 * replicated (`--nats`), the swarm's log, so every orchestrator holds the same (docs/security.md).
 */
export interface BindingStore {
  keyOf(id: string): string | undefined;
  /** Binds `id` to `key` unless bound already; true when it is `key`'s now. */
  claim(id: string, key: string): boolean | Promise<boolean>;
  /** Frees `id`; true when it was bound. */
  release(id: string): boolean | Promise<boolean>;
}

/** What the orchestrators of a replicated swarm (`--nats`) share of their trust. */
export interface SharedTrust {
  /** The swarm's name: its members sign for `swarm/<name>`. */
  readonly swarm: string;
  /** The id → key bindings, on the log. */
  readonly bindings?: BindingStore;
  /** Records `nonce` as taken by the swarm: false when an orchestrator of it took it already (the NATS nonce bucket). */
  claimNonce(nonce: string): Promise<boolean>;
}

/** The audience members sign for: `swarm/<name>` replicated, else this process's own, new each start. */
export function orchestratorAudience(shared: SharedTrust | undefined): string {
  return shared !== undefined ? `swarm/${shared.swarm}` : `orchestrator/${randomBytes(16).toString('hex')}`;
}

/** A 401 for a signature, naming the audience header when that is what is wrong (the agent then asks again). */
const unsigned = (reason: string): ServeError => new ServeError('Unauthenticated', 401, reason, { field: reason.startsWith(`header ${SIGNATURE_HEADERS.audience}`) ? SIGNATURE_HEADERS.audience : 'headers' });

/** The agents' routes, by fastify route pattern: what each is called in messages. */
const MEMBER_ROUTES: ReadonlyMap<string, 'join' | 'heartbeat' | 'kv report' | 'leave'> = new Map([
  ['/v1/nodes', 'join'],
  ['/v1/nodes/:id/heartbeat', 'heartbeat'],
  ['/v1/nodes/:id/kv', 'kv report'],
  ['/v1/nodes/:id/leave', 'leave'],
]);
const ADMIN_ROUTE = '/v1/nodes/:id/key';
/** The operator's routes, as `METHOD pattern`: the bearer of the operator token only (the key route also takes the id's own key). */
const OPERATOR_ROUTES: ReadonlySet<string> = new Set([`DELETE ${ADMIN_ROUTE}`, 'DELETE /v1/nodes/:id', 'DELETE /v1/nodes']);
/** The views that name agents' addresses: a caller other than the operator gets them without. */
const VIEW_ROUTES: ReadonlySet<string> = new Set(['/v1/status', '/v1/events']);
/** Requests to a view by a caller other than the operator, on a guarded orchestrator. */
const clientViews = new WeakSet<object>();

/** Whether `request` reads a view as a client (not the operator): it is shown no agent's address. */
export function isClientView(request: FastifyRequest): boolean {
  return clientViews.has(request.raw);
}

const verified = new WeakMap<object, SignedParts>();
/** A verified join of an id bound to no key yet, by request: binds it once the join is admitted. */
const pendingClaims = new WeakMap<object, () => Promise<void>>();

const mismatch = (id: string, what: string): ServeError =>
  new ServeError('KeyMismatch', 409, `agent "${id}" is bound to another key: its ${what} is refused (the operator, or its own key, frees the id with DELETE /v1/nodes/${id}/key)`, { field: 'id' });

/**
 * Binds the id of `request`, a verified join of an id bound to no key, to the key that signed it;
 * the join route calls it once the edge admitted the join (join-edge.ts), before the join starts,
 * so a join refused there (400 `url`, 429, 503 `Full`) leaves no binding behind, and of two first
 * joins of one id the second is refused. Alone the binding is made at once; replicated (`--nats`)
 * it resolves once the log applied it, and the first bind on the log wins on every orchestrator.
 * A no-op for any other request.
 * @throws {ServeError} 409 `KeyMismatch` when another key bound the id since the request was verified
 * @throws {ReplicationError} replicated, when the bind cannot reach the log (`Disconnected`, 503)
 */
export async function bindJoinKey(request: FastifyRequest): Promise<void> {
  const claim = pendingClaims.get(request.raw);
  pendingClaims.delete(request.raw);
  await claim?.();
}

const bearer = (request: FastifyRequest): string | undefined => /^Bearer (\S+)$/i.exec(request.headers.authorization ?? '')?.[1];

/**
 * Registers the checks, `GET /v1/audience` and the admin route on the orchestrator's app (before
 * its routes are added).
 * @param shared what the orchestrators of a replicated swarm (`--nats`) share: then `auth.bindingsFile` is neither read nor written
 * @returns the audience its members sign for
 * @throws {AuthError} `StateFile` when `auth.bindingsFile` exists but cannot be read
 */
export function guardOrchestrator(app: FastifyInstance, auth: OrchestratorAuth, log: (line: string) => void, shared?: SharedTrust): string {
  const bindings: BindingStore = shared?.bindings ?? new KeyBindings(auth.bindingsFile);
  const clock = auth.clock ?? systemClock;
  const maxSkewMs = auth.maxSkewMs ?? DEFAULT_MAX_SKEW_MS;
  const nonces = new NonceCache(2 * maxSkewMs);
  const window: SignatureWindow = { audience: orchestratorAudience(shared), maxSkewMs };
  const answer: AudienceAnswer = { audience: window.audience, signing: SIGNING_PROTOCOL };
  app.get(AUDIENCE_PATH, async () => answer);
  const secretText = Buffer.from(auth.secret).toString('utf8');

  const operatorText = auth.operatorToken === undefined ? undefined : Buffer.from(auth.operatorToken).toString('utf8');
  const isOperator = (request: FastifyRequest): boolean => {
    const token = bearer(request);
    return token !== undefined && operatorText !== undefined && sameSecret(token, operatorText);
  };
  const checkOperator = (request: FastifyRequest): void => {
    if (isOperator(request)) return;
    const why = operatorText === undefined ? 'this orchestrator has no operator token (serve --operator-token-file)' : sameSecret(bearer(request) ?? '', secretText) ? 'the swarm secret is a member\'s credential, not the operator\'s' : 'not the operator token';
    throw new ServeError('Unauthenticated', 401, `header authorization: ${request.method} ${request.routeOptions.url ?? ''} needs "Bearer <operator token>": ${why}`, { field: 'authorization' });
  };
  const checkSecret = async (request: FastifyRequest): Promise<void> => {
    const verdict = verifySignature(auth.secret, { method: request.method, path: request.url, headers: request.headers, body: rawBody(request) }, clock.now(), nonces, window);
    if (!verdict.ok) throw unsigned(verdict.reason);
    // Replicated: taken once by the whole swarm (a request captured at one replica, replayed to another).
    if (shared !== undefined && !(await shared.claimNonce(verdict.parts.nonce))) throw unsigned(`header ${SIGNATURE_HEADERS.nonce}: already used at an orchestrator of swarm "${shared.swarm}" (a replayed request)`);
    verified.set(request.raw, verdict.parts);
  };

  // Before the body is read: what the headers alone show (docs/security.md, "Connections and bodies").
  app.addHook('onRequest', async (request) => {
    const what = request.method === 'POST' ? MEMBER_ROUTES.get(request.routeOptions.url ?? '') : undefined; // DELETE /v1/nodes is the operator's
    if (what === undefined) return;
    const refused = checkSignatureHeaders(request.headers, clock.now(), nonces, window);
    if (refused !== undefined) throw unsigned(refused);
    const key = request.headers[AGENT_KEY_HEADERS.key];
    if (typeof key !== 'string' || typeof request.headers[AGENT_KEY_HEADERS.signature] !== 'string') throw new ServeError('Unauthenticated', 401, `the ${what} is not signed by the agent's key (headers ${AGENT_KEY_HEADERS.key}, ${AGENT_KEY_HEADERS.signature})`, { field: 'headers' });
    if (what === 'join') return; // its id is in its body
    const id = (request.params as { id: string }).id;
    const bound = bindings.keyOf(id);
    if (bound !== undefined && bound !== key) throw mismatch(id, what); // not logged: nothing in it is verified yet
  });

  app.addHook('preValidation', async (request) => {
    const route = request.routeOptions.url;
    if (route === undefined) return;
    if (OPERATOR_ROUTES.has(`${request.method} ${route}`)) {
      // The key route also takes the id's own key, signed like a leave (checked after validation).
      if (route === ADMIN_ROUTE && bearer(request) === undefined && request.headers[AGENT_KEY_HEADERS.key] !== undefined) await checkSecret(request);
      else checkOperator(request);
    } else if (MEMBER_ROUTES.has(route) && request.method === 'POST') await checkSecret(request);
    else if (VIEW_ROUTES.has(route)) {
      if (!isOperator(request)) clientViews.add(request.raw);
    } else if (route === '/v1/generate' && auth.clientToken !== undefined) {
      const token = bearer(request);
      const accepted = token !== undefined && (sameSecret(token, Buffer.from(auth.clientToken).toString('utf8')) || (auth.classTokens ?? []).some((t) => sameSecret(token, t)));
      if (!accepted) throw new ServeError('Unauthenticated', 401, 'header authorization: POST /v1/generate needs "Bearer <client token>" (--client-token-file)', { field: 'authorization' });
    }
  });

  // After validation: the id is well formed, and the join's body is the one the agent signed.
  app.addHook('preHandler', async (request) => {
    const route = request.routeOptions.url ?? '';
    const what = route === ADMIN_ROUTE && verified.has(request.raw) ? 'release' : request.method === 'POST' ? MEMBER_ROUTES.get(route) : undefined;
    if (what === undefined) return;
    const id = what === 'join' ? (request.body as { id: string }).id : (request.params as { id: string }).id;
    const key = request.headers[AGENT_KEY_HEADERS.key];
    const signature = request.headers[AGENT_KEY_HEADERS.signature];
    const parts = verified.get(request.raw);
    if (typeof key !== 'string' || typeof signature !== 'string' || parts === undefined) throw new ServeError('Unauthenticated', 401, `agent "${id}": the ${what} is not signed by the agent's key (headers ${AGENT_KEY_HEADERS.key}, ${AGENT_KEY_HEADERS.signature})`, { field: 'headers' });
    if (!verifyAgentSignature(key, signature, id, parts)) throw new ServeError('Unauthenticated', 401, `agent "${id}": header ${AGENT_KEY_HEADERS.signature} does not verify with the key sent`, { field: 'headers' });
    const bound = bindings.keyOf(id);
    if (bound !== undefined && bound !== key) {
      log(`refused a ${what} for "${id}" signed by another key than the one it joined with`);
      throw mismatch(id, what);
    }
    if (what === 'release' && bound === undefined) throw new ServeError('Unauthenticated', 401, `agent "${id}" is bound to no key: only the operator frees it`, { field: 'headers' });
    if (what === 'join' && bound === undefined) {
      pendingClaims.set(request.raw, async () => {
        if (await bindings.claim(id, key)) return;
        log(`refused a join for "${id}": another key bound the id first`);
        throw mismatch(id, what);
      });
    }
  });

  app.delete<{ Params: { id: string } }>(ADMIN_ROUTE, { schema: { params: { type: 'object', required: ['id'], properties: { id: { type: 'string', minLength: 1, maxLength: 200 } } } } }, async (request) => {
    const { id } = request.params;
    const removed = await bindings.release(id);
    log(removed ? `the key binding of "${id}" was removed: its next join binds a key again` : `no key binding of "${id}" to remove`);
    return { id, removed };
  });
  return window.audience;
}
