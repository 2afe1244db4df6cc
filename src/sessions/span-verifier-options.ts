/**
 * The checks of `verifySpans`' arguments (docs/sessions.md, "Verification"), as the other session
 * options are checked: a typed error naming the key, before anything runs.
 */
import { unknownKey, unknownKeyMessage } from '../core/arguments.js';
import { describeValue, isRecordLike } from '../core/describe.js';
import { SessionError } from '../core/errors.js';

const KEYS: readonly string[] = Object.freeze(['sample', 'random', 'copies', 'quarantine', 'check', 'same', 'onVerdict', 'historyBytes', 'thirdNodes', 'standing', 'probation']);
const FUNCTIONS = ['random', 'copies', 'quarantine'] as const;
const OPTIONAL_FUNCTIONS = ['check', 'same', 'onVerdict', 'thirdNodes'] as const;

/**
 * Checks `verifySpans(runner, options)`'s arguments.
 * @throws {SessionError} `InvalidInput` naming the argument or key.
 */
export function checkSpanVerifierArguments(runner: unknown, options: unknown): void {
  if (typeof runner !== 'function') throw new SessionError('InvalidInput', `verifySpans: the runner must be a stage runner function, got ${describeValue(runner)}`);
  if (!isRecordLike(options)) throw new SessionError('InvalidInput', `verifySpans: options must be an object { sample, random, copies, quarantine, check?, same?, onVerdict?, historyBytes?, thirdNodes?, standing?, probation? }, got ${describeValue(options)}`);
  const unknown = unknownKey(options, KEYS);
  if (unknown !== undefined) throw new SessionError('InvalidInput', unknownKeyMessage('verifySpans options', unknown, KEYS));
  const o = options as Record<string, unknown>;
  const sample = o['sample'];
  if (!(typeof sample === 'number' && sample >= 0 && sample <= 1)) throw new SessionError('InvalidInput', `verifySpans option "sample" must be a number from 0 to 1, got ${describeValue(sample)}`);
  for (const key of FUNCTIONS) if (typeof o[key] !== 'function') throw new SessionError('InvalidInput', `verifySpans option "${key}" must be a function, got ${describeValue(o[key])}`);
  for (const key of OPTIONAL_FUNCTIONS) if (o[key] !== undefined && typeof o[key] !== 'function') throw new SessionError('InvalidInput', `verifySpans option "${key}" must be a function, got ${describeValue(o[key])}`);
  const probation = o['probation'];
  if (probation !== undefined && !(typeof probation === 'number' && Number.isInteger(probation) && probation >= 0)) throw new SessionError('InvalidInput', `verifySpans option "probation" must be a whole number of checks ≥ 0, got ${describeValue(probation)}`);
  const standing = o['standing'];
  if (standing !== undefined && !(isRecordLike(standing) && typeof standing['draw'] === 'function' && typeof standing['weight'] === 'function')) throw new SessionError('InvalidInput', `verifySpans option "standing" must be a SpanStanding, got ${describeValue(standing)}`);
  const bound = o['historyBytes'];
  if (bound !== undefined && !(isRecordLike(bound) && typeof bound['max'] === 'number' && bound['max'] >= 0 && typeof bound['sizeOf'] === 'function')) throw new SessionError('InvalidInput', `verifySpans option "historyBytes" must be { max: bytes ≥ 0, sizeOf: (input) => bytes }, got ${describeValue(bound)}`);
}
