/**
 * `POST /v1/completions` on the orchestrator, in OpenAI's shape: the prompt tokenized by the
 * model's own tokenizer (read at start, never its weights), one token generation on the seated
 * swarm (completion-run.ts: one Generation, as `POST /v1/generate`'s — the caller's class, its
 * `Idempotency-Key`, verification), answered whole or as OpenAI's server-sent chunks ending
 * `data: [DONE]`. The choice carries the text and, as an extension, `token_ids`
 * (docs/completions.md).
 */
import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PeerPost } from '../net/peer-post.js';
import type { CallOutcomes } from './member-bench.js';
import type { SessionOptions } from '../sessions/session-types.js';
import { ServeError } from '../wire/serve-error.js';
import { AgentDrops } from './agent-drops.js';
import { cancelOnHangUp } from './client-cancel.js';
import { classOf, type ClientClass, type ClientClasses } from './client-classes.js';
import { idempotencyKeyOf } from './idempotency-key.js';
import { scopedKey } from './idempotency-scope.js';
import type { IdempotencySettings } from './idempotent-generate.js';
import type { SpanChecks } from './verify-span.js';
import { parseCompletionRequest, type CompletionRequest } from './completion-request.js';
import { completionGeneration, DEFAULT_MAX_HISTORY_BYTES, type CompletionGeneration, type CompletionResult, type TextModel } from './completion-run.js';
import { rejectionOf } from './generation.js';
import { CompletionMetrics } from './completion-metrics.js';
import { asServeError } from './error-answers.js';
import type { OrchestratorParts } from './orchestrator-parts.js';

/** Options of {@link registerCompletionsRoute}. */
export interface CompletionsRouteOptions {
  /** The models with a tokenizer, by id: the only ones a completion may name. */
  readonly models: ReadonlyMap<string, TextModel>;
  readonly session: SessionOptions;
  readonly post: PeerPost;
  /** Each completion's bound on its history of boundary activations. @defaultValue {@link DEFAULT_MAX_HISTORY_BYTES} */
  readonly maxHistoryBytes?: number;
  /** Client classes (client-classes.ts): a caller's priority, deadline and limit. */
  readonly classes?: ClientClasses;
  /** Where completions with an `Idempotency-Key` header are kept (their token ids checkpointed). */
  readonly idempotency?: IdempotencySettings;
  /** Verifies a share of the stage calls on other copies (verify-span.ts). */
  readonly checks?: SpanChecks;
  /** Told whether each stage call's agent answered (member-bench.ts). */
  readonly outcomes?: CallOutcomes;
}

/** The prompt's token ids: text through the tokenizer (after its bos token, as Llama's), ids checked against the vocabulary. */
export function promptIds(model: TextModel, prompt: CompletionRequest['prompt']): number[] {
  if (typeof prompt !== 'string') {
    const bad = prompt.findIndex((t) => t >= model.vocab);
    if (bad >= 0) throw new ServeError('InvalidRequest', 400, `prompt/${bad}: token id ${prompt[bad]} is outside the vocabulary of "${model.id}" (${model.vocab} tokens)`, { field: `prompt/${bad}` });
    return [...prompt];
  }
  const bos = model.tokenizer.bosTokenId;
  const ids = [...(bos !== undefined ? [bos] : []), ...model.tokenizer.encode(prompt)];
  if (ids.length === 0) throw new ServeError('InvalidRequest', 400, `prompt: empty, and "${model.id}" has no bos token to start from`, { field: 'prompt' });
  return ids;
}

/** One completion on prompt ids already made (a chat's rendered conversation): what {@link LocalCompletions.run} takes. */
export interface LocalAsk {
  readonly model: TextModel;
  readonly promptIds: readonly number[];
  readonly maxTokens: number;
  readonly sampling: { readonly temperature: number; readonly topP: number; readonly seed: number };
  readonly stop: readonly string[];
}

/** Who asks a completion, as its Generation needs it: its class, its key, its hang-up. */
interface Asker {
  readonly signal: AbortSignal;
  readonly cls?: ClientClass | undefined;
  /** Its idempotency key, scoped to it. */
  readonly key?: string | undefined;
}

/** Text completions of the models served with their tokenizer: the OpenAI routes hand them their requests. */
export interface LocalCompletions {
  /** Whether `model` is one of them. */
  serves(model: string): boolean;
  /** The model `id` of them, with its tokenizer. */
  textModel(id: string): TextModel | undefined;
  /**
   * Answers one `POST /v1/completions` (whole, or streamed on the raw response). `handedBack`: the
   * drain's gate (drain-gate.ts) aborts it with 503 `Draining` to hand the completion back: its
   * session is aborted and its client answered so (whole: the 503; streamed: an error event).
   */
  handle(request: FastifyRequest, reply: FastifyReply, handedBack?: AbortSignal): Promise<unknown>;
  /** Runs one completion as one Generation, as {@link LocalCompletions.handle} runs its own (the OpenAI chat route's, on its rendered prompt). */
  run(ask: LocalAsk, signal: AbortSignal, onText?: (delta: string, tokenId: number) => void): Promise<CompletionResult>;
}

/** The completions of `options.models` on real tokens. */
export function localCompletions(parts: OrchestratorParts, options: CompletionsRouteOptions): LocalCompletions {
  const { registry, seat, metrics, clock, classLimits } = parts;
  const drops = new AgentDrops(registry, options.post, clock, metrics);
  const boot = randomBytes(4).toString('hex');
  const maxHistoryBytes = options.maxHistoryBytes ?? DEFAULT_MAX_HISTORY_BYTES;
  const counts = new CompletionMetrics(metrics.registry, maxHistoryBytes);
  const noSwarm = (model: string): ServeError => new ServeError('NoSwarm', 503, `no swarm yet: the agents that joined (${[...registry.all()].map((r) => r.id).join(', ') || 'none'}) cannot hold every copy of "${model}"`);
  /** One completion's Generation, for `asker`: its class's band and deadline, its key. @throws {ServeError} `NoSwarm` */
  const generationOf = (ask: LocalAsk, asker: Asker, onText?: (delta: string, tokenId: number) => void): CompletionGeneration => {
    const swarm = seat.local();
    if (swarm === undefined) throw noSwarm(ask.model.id);
    const namespace = `${boot}/`;
    const deadlineMs = Math.min(asker.cls?.deadlineMs ?? Number.POSITIVE_INFINITY, options.session.deadlineMs ?? Number.POSITIVE_INFINITY);
    return completionGeneration({
      swarm,
      calls: { registry, metrics, post: options.post, ...(options.outcomes !== undefined ? { outcomes: options.outcomes } : {}) },
      model: ask.model,
      promptIds: ask.promptIds,
      maxTokens: ask.maxTokens,
      sampling: ask.sampling,
      stop: ask.stop,
      session: { ...options.session, ...(Number.isFinite(deadlineMs) ? { deadlineMs } : {}), signal: asker.signal, dropSession: drops.hook(namespace) },
      sessionNamespace: namespace,
      clock,
      priority: asker.cls?.priority ?? 0,
      className: asker.cls?.name ?? 'default',
      ...(options.checks !== undefined ? { checks: options.checks } : {}),
      ...(asker.key !== undefined && options.idempotency !== undefined ? { idempotency: { key: asker.key, settings: options.idempotency, cancel: asker.signal } } : {}),
      maxHistoryBytes,
      live: counts.live,
      ...(onText !== undefined ? { onText } : {}),
    });
  };
  const counted = (r: CompletionResult): CompletionResult => {
    counts.tokens.inc(r.tokenIds.length);
    counts.replayedBytes.inc(r.replayedBytes);
    return r;
  };
  const run = async (ask: LocalAsk, signal: AbortSignal, onText?: (delta: string, tokenId: number) => void): Promise<CompletionResult> => counted(await generationOf(ask, { signal }, onText).run());
  const answer = async (request: FastifyRequest, reply: FastifyReply, cls: ClientClass | undefined, handedBack: AbortSignal | undefined): Promise<unknown> => {
    const body = parseCompletionRequest(request.body);
    const model = options.models.get(body.model);
    if (model === undefined) throw new ServeError('InvalidRequest', 400, `model: "${body.model}" is not a model served here with a tokenizer (${[...options.models.keys()].map((m) => `"${m}"`).join(', ') || 'none'})`, { field: 'model' });
    const ids = promptIds(model, body.prompt);
    if (seat.local() === undefined) throw noSwarm(model.id);
    // The caller's class: its band, its deadline, its limit.
    const given = idempotencyKeyOf(request.headers['idempotency-key'], undefined);
    // Scoped to its caller (docs/serve.md, "Idempotent generation"): a token's hash, else the source address.
    const key = given === undefined ? undefined : scopedKey(given, { authorization: request.headers.authorization, address: request.socket.remoteAddress, ...(cls !== undefined ? { className: cls.name } : {}) });
    const hungUp = cancelOnHangUp(reply);
    const signal = handedBack === undefined ? hungUp : AbortSignal.any([hungUp, handedBack]);
    const id = `cmpl-${boot}-${randomBytes(6).toString('hex')}`;
    const created = Math.floor(Date.now() / 1000);
    const ask: LocalAsk = { model, promptIds: ids, maxTokens: body.maxTokens, sampling: { temperature: body.temperature, topP: body.topP, seed: body.seed }, stop: body.stop };
    let built: CompletionGeneration | undefined;
    const run = async (onText?: (delta: string, tokenId: number) => void): Promise<CompletionResult> => counted(await (built = generationOf(ask, { signal, cls, key }, onText)).run());
    const extension = (r: CompletionResult): Record<string, unknown> => ({
      session_id: r.sessionId,
      resumes: r.resumes,
      replayed_inputs: r.replayedInputs,
      replayed_bytes: r.replayedBytes,
      path: r.path,
      ...(r.resumedFrom > 0 ? { resumed_from: r.resumedFrom } : {}),
      ...(body.returnLogits ? { last_logits_f32: Buffer.from(r.lastLogits.buffer, r.lastLogits.byteOffset, r.lastLogits.byteLength).toString('base64') } : {}),
    });
    /** A failure counted: by its code, and as an admission rejection when it never ran (a full queue, no slot in time, the client gone while it waited). */
    const failed = (error: unknown): unknown => {
      // Handed back by a drain: the drain's 503 with Retry-After, not the session's abort.
      const answered = asServeError(handedBack?.aborted === true && !hungUp.aborted && handedBack.reason instanceof ServeError ? handedBack.reason : error);
      counts.requests.inc({ outcome: answered instanceof ServeError ? answered.code : 'Internal' });
      const reason = rejectionOf(answered, hungUp.aborted, built?.generation);
      if (reason !== undefined) metrics.admission.rejections.inc({ reason });
      return answered;
    };
    const usage = (r: CompletionResult) => ({ prompt_tokens: ids.length, completion_tokens: r.tokenIds.length, total_tokens: ids.length + r.tokenIds.length });
    if (!body.stream) {
      try {
        const r = await run();
        counts.requests.inc({ outcome: 'ok' });
        return {
          id,
          object: 'text_completion',
          created,
          model: model.id,
          choices: [{ index: 0, text: r.text, finish_reason: r.finishReason, logprobs: null, token_ids: r.tokenIds }],
          usage: usage(r),
          hecate: extension(r),
        };
      } catch (error) {
        throw failed(error);
      }
    }
    // Streaming: OpenAI's chunks, one per final piece of text, then the finish, then [DONE].
    reply.hijack();
    const out = reply.raw;
    out.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    const chunk = (choice: Record<string, unknown>, extra: Record<string, unknown> = {}) => out.write(`data: ${JSON.stringify({ id, object: 'text_completion', created, model: model.id, choices: [{ index: 0, logprobs: null, ...choice }], ...extra })}\n\n`);
    let sent = '';
    try {
      const r = await run((delta) => {
        sent += delta;
        chunk({ text: delta, finish_reason: null });
      });
      // An idempotency key's stored answer ran nothing here: its text in one chunk.
      if (r.text.length > sent.length && r.text.startsWith(sent)) chunk({ text: r.text.slice(sent.length), finish_reason: null });
      chunk({ text: '', finish_reason: r.finishReason, token_ids: r.tokenIds }, { usage: usage(r), hecate: extension(r) });
      counts.requests.inc({ outcome: 'ok' });
    } catch (error) {
      const answered = failed(error);
      const e = answered instanceof ServeError ? answered : undefined;
      out.write(`data: ${JSON.stringify({ error: { code: e?.code ?? 'Internal', message: (answered as Error).message } })}\n\n`);
    }
    out.end('data: [DONE]\n\n');
    return reply;
  };
  // A class's limit counts its completions under way, streamed ones until their last chunk.
  const handle = async (request: FastifyRequest, reply: FastifyReply, handedBack?: AbortSignal): Promise<unknown> => {
    const cls = options.classes === undefined ? undefined : classOf(options.classes, request.headers);
    if (cls !== undefined) {
      try {
        classLimits.enter(cls, 1000); // 429 RateLimited past the class's maxInFlight
      } catch (error) {
        metrics.admission.rejections.inc({ reason: 'RateLimited' });
        throw error;
      }
    }
    try {
      return await answer(request, reply, cls, handedBack);
    } finally {
      if (cls !== undefined) classLimits.leave(cls);
    }
  };
  return { serves: (model) => options.models.has(model), textModel: (id) => options.models.get(id), handle, run };
}
