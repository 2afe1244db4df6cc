/**
 * What the conformance runner checks of a stage server, one named check each (docs/engine.md,
 * "Conformance"): every one a call or a few, and a verdict that says what was expected and seen.
 */
import { tokenTensor, type Tensor } from '../wire/tensor.js';
import type { StageRequest } from '../wire/stage-protocol.js';
import type { ProbeAnswer, StageProbe } from './stage-probe.js';

/** One check's verdict. */
export interface CheckResult {
  readonly name: string;
  readonly ok: boolean;
  /** What was expected and what came back. */
  readonly detail: string;
}

/** What the checks know of the agent under test. */
export interface CheckContext {
  readonly probe: StageProbe;
  readonly model: { readonly id: string; readonly layers: number };
  /** The engine's kind as its health says: `digest` takes 32-bit digests, any other token ids. */
  readonly engine: string;
  /** Whether the runner holds the swarm secret (the signature checks need it). */
  readonly signed: boolean;
  /** Distinguishes this run's session ids from another run's on the same agent. */
  readonly runId: string;
}

/** The input of step `step` of a probe session: a digest for the digest engine, else one token id. */
function inputOf(context: CheckContext, session: number, step: number): Tensor {
  if (context.engine === 'digest') return { dtype: 'u32', shape: [1, 1], data: new Uint8Array(new Uint32Array([(0x9e3779b9 * (session + 1) + step * 0x85ebca6b) >>> 0]).buffer) };
  return tokenTensor([(session * 7 + step * 13 + 1) % 200]);
}

/** A whole-model stage call of step `step`. */
function call(context: CheckContext, sessionId: string, session: number, step: number, fresh: boolean, replay: readonly Tensor[] = []): StageRequest {
  return { sessionId: `${context.runId}/${sessionId}`, modelId: context.model.id, layerStart: 0, layerEnd: context.model.layers, step, fresh, tokens: 1, input: inputOf(context, session, step), replay };
}

const same = (a: Tensor, b: Tensor): boolean => a.dtype === b.dtype && a.shape.join() === b.shape.join() && Buffer.from(a.data).equals(Buffer.from(b.data));
const show = (a: ProbeAnswer): string => (a.unreadable !== undefined ? `${a.status}: ${a.unreadable}` : a.error !== undefined ? `${a.status} ${String(a.error.code)}: ${String(a.error.message).slice(0, 160)}` : `${a.status}`);
const isErrorShape = (a: ProbeAnswer): boolean => typeof a.error?.code === 'string' && typeof a.error.message === 'string';
const result = (name: string, ok: boolean, detail: string): CheckResult => ({ name, ok, detail });

/** Runs every check in order and returns their verdicts. */
export async function runChecks(context: CheckContext): Promise<CheckResult[]> {
  const { probe } = context;
  const results: CheckResult[] = [];

  // One step, answered with a signed stage message that names the agent's span.
  const first = await probe.stage(call(context, 'a', 0, 0, true));
  const reply = first.reply;
  results.push(result('step', reply !== undefined && reply.header['layerStart'] === 0 && reply.header['layerEnd'] === context.model.layers, reply !== undefined ? `output ${reply.output.dtype} [${reply.output.shape.join(', ')}]` : `expected 200 with a stage message, got ${show(first)}`));
  if (context.signed) results.push(result('reply signed', reply !== undefined && first.replySignature === undefined, reply === undefined ? 'no reply to check' : (first.replySignature ?? 'the reply is signed with the swarm secret and bound to the call')));

  // The same call on another session gives the same bytes.
  const again = await probe.stage({ ...call(context, 'b', 0, 0, true) });
  results.push(result('deterministic', reply !== undefined && again.reply !== undefined && same(reply.output, again.reply.output), again.reply === undefined ? `second call: ${show(again)}` : reply !== undefined && same(reply.output, again.reply.output) ? 'two sessions, same input: same output bytes' : 'two sessions given the same input answered different outputs'));

  // Three steps on one session, then a drop; then the third step on a fresh session rebuilt from the replay of the first two.
  const outputs: Tensor[] = [];
  const inputs: Tensor[] = [];
  let stepsOk = true;
  for (let step = 0; step < 3; step++) {
    const request = call(context, 'c', 2, step, step === 0);
    inputs.push(request.input);
    const answer = await probe.stage(request);
    if (answer.reply === undefined) {
      stepsOk = false;
      results.push(result('continue a session', false, `step ${step}: ${show(answer)}`));
      break;
    }
    outputs.push(answer.reply.output);
  }
  if (stepsOk) results.push(result('continue a session', true, 'three steps of one session answered'));
  const dropped = await probe.drop(`${context.runId}/c`);
  results.push(result('drop', dropped.status === 200, `drop answered ${show(dropped)}`));
  const afterDrop = await probe.stage(call(context, 'c', 2, 2, false));
  results.push(result('dropped session refused', afterDrop.status === 409 && afterDrop.error?.code === 'UnknownSession', `a step of a dropped session: expected 409 UnknownSession, got ${show(afterDrop)}`));
  const unknown = await probe.stage(call(context, 'never', 2, 1, false));
  results.push(result('unknown session refused', unknown.status === 409 && unknown.error?.code === 'UnknownSession', `a step past 0 of a session the agent never held, without its replay: expected 409 UnknownSession, got ${show(unknown)}`));
  // A replacement rebuilds the session from the replay of its earlier inputs: the next output is the unbroken session's.
  const rebuilt = await probe.stage(call(context, 'c-rebuilt', 2, 2, true, inputs.slice(0, 2)));
  const replayOk = stepsOk && rebuilt.reply !== undefined && same(rebuilt.reply.output, outputs[2] as Tensor) && rebuilt.reply.replayOutputs.length === 2 && rebuilt.reply.replayOutputs.every((t, i) => same(t, outputs[i] as Tensor));
  results.push(result('drop then replay', replayOk, rebuilt.reply === undefined ? `expected the rebuilt step, got ${show(rebuilt)}` : replayOk ? 'the replayed session answers the step as the unbroken one did, and its replay outputs are the earlier outputs' : 'the step after a replay differs from the unbroken session\'s (the replay did not rebuild the caches)'));

  // Bounds: malformed messages and fields are refused with the error shape, naming the field.
  const garbage = await probe.raw(new TextEncoder().encode('not a stage message'));
  results.push(result('malformed message refused', garbage.status === 400 && isErrorShape(garbage), `expected 400 { error: { code, message } }, got ${show(garbage)}`));
  const backwards = await probe.stage({ ...call(context, 'd', 3, 0, true), layerStart: 1, layerEnd: 1 });
  results.push(result('bad span refused', backwards.status === 400 && isErrorShape(backwards) && backwards.error?.field === 'layerEnd', `layerEnd = layerStart: expected 400 naming field layerEnd, got ${show(backwards)} (field ${String(backwards.error?.field)})`));
  const outside = await probe.stage({ ...call(context, 'e', 4, 0, true), layerEnd: context.model.layers + 1 });
  results.push(result('span past the model refused', outside.status === 400 && isErrorShape(outside), `layerEnd past the model's ${context.model.layers} layers: expected 400, got ${show(outside)}`));
  const tooMany = await probe.stage({ ...call(context, 'f', 5, 0, true), tokens: 1, input: context.engine === 'digest' ? { dtype: 'u32', shape: [2, 1], data: new Uint8Array(8) } : tokenTensor([1, 2]) });
  results.push(result('input past its tokens refused', tooMany.status === 400 && isErrorShape(tooMany), `an input of 2 tokens in a call of 1: expected 400, got ${show(tooMany)}`));

  // Signatures: unsigned, signed with another secret, for another agent, and a captured call replayed.
  if (context.signed) {
    const unsigned = await probe.stage(call(context, 'g', 6, 0, true), 'none');
    results.push(result('unsigned call refused', unsigned.status === 401, `expected 401, got ${show(unsigned)}`));
    const forged = await probe.stage(call(context, 'h', 7, 0, true), 'wrong-secret');
    results.push(result('bad signature refused', forged.status === 401, `signed with another secret: expected 401, got ${show(forged)}`));
    const elsewhere = await probe.stage(call(context, 'j', 9, 0, true), 'other-agent');
    results.push(result('call for another agent refused', elsewhere.status === 401, `signed for another agent's audience: expected 401, got ${show(elsewhere)}`));
    const request = call(context, 'i', 8, 0, true);
    const once = await probe.stage(request);
    const replayed = await probe.stage(request, { replayOf: once.sentHeaders });
    results.push(result('replayed call refused', once.status === 200 && replayed.status === 401, `the same signed call twice: expected 200 then 401, got ${once.status} then ${show(replayed)}`));
  }
  return results;
}
