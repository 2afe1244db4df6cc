/**
 * W6's inputs checked (docs/inputs.md): the options of `runSessionSim` and the result
 * `sessionTable` prints, so a JavaScript caller's mistake is an {@link InputError} naming the
 * path, never a TypeError from deep inside, and no options ask for hours of simulation.
 */
import { z } from 'zod';
import { describeValue } from '../../core/describe.js';
import { InputError } from '../input-error.js';
import { firstIssue } from '../topology.js';
import { LOAD_SIM_LIMITS } from './run.js';
import type { SessionSimOptions, SessionSimResult } from './session-sim.js';

const sessionOptionsSchema = z.object({
  seed: z.int().min(0).max(2 ** 31 - 1).optional(),
  seeds: z.int().min(1).max(LOAD_SIM_LIMITS.seeds).optional(),
  sessions: z.int().min(1).max(LOAD_SIM_LIMITS.sessions).optional(),
  detectMs: z.number().min(0).max(1e9).optional(),
  onProgress: z.custom<SessionSimOptions['onProgress']>((f) => typeof f === 'function', 'must be a function (done, total, label) => void').optional(),
});

/**
 * The options of `runSessionSim`, checked: types, bounds, and seeds × sessions at most
 * `LOAD_SIM_LIMITS.sessionWork`.
 * @throws {InputError} naming the option.
 */
export function checkSessionSimOptions(options: unknown): SessionSimOptions {
  const file = 'runSessionSim options';
  if (options === null || typeof options !== 'object') throw new InputError(file, '$', `must be an object, got ${describeValue(options)}`);
  const parsed = sessionOptionsSchema.safeParse(options);
  if (!parsed.success) throw firstIssue(parsed.error.issues, file, '$');
  const o = parsed.data as SessionSimOptions;
  const work = (o.seeds ?? 10) * (o.sessions ?? 48);
  if (work > LOAD_SIM_LIMITS.sessionWork) throw new InputError(file, '$', `seeds × sessions is ${work}, over the limit of ${LOAD_SIM_LIMITS.sessionWork}`);
  return o;
}

const count = z.number().refine(Number.isFinite, 'must be finite');
const figures = z.looseObject({
  completed: count,
  correct: count,
  lost: count,
  lostWithCover: count,
  failures: count,
  freshLayerSteps: count,
  replayLayerSteps: count,
  rerunLayerSteps: count,
  recomputeLayerSteps: count,
  lostLayerSteps: count,
  replayMs: count,
  worstFailureRatio: count,
  p50: count,
  p99: count,
  affectedP99: count,
});
const resultSchema = z.looseObject({
  label: z.string(),
  seeds: z.array(z.number()),
  sessionsPerRun: count,
  detectMs: count,
  prefillInputsPerStep: count,
  strategies: z.array(z.looseObject({ strategy: z.string(), median: figures, pooledP99: count })),
  targets: z.array(z.looseObject({ target: z.string(), value: count, limit: count, pass: z.boolean() })),
});

/**
 * A W6 result as `sessionTable` reads it.
 * @throws {InputError} naming the path.
 */
export function checkSessionSimResult(result: unknown): SessionSimResult {
  const parsed = resultSchema.safeParse(result);
  if (!parsed.success) throw firstIssue(parsed.error.issues, 'sessionTable', '$');
  return result as SessionSimResult;
}
