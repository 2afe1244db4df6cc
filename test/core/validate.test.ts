import { describe, expect, it } from 'vitest';
import { PlanError, planSwarm, validatePlan } from '../../src/index.js';
import type { ModelSpec, NodeProfile, PlanIssue, SwarmPlan } from '../../src/index.js';
import { pipe, st, thrown } from './fixtures.js';

const profiles: NodeProfile[] = [
  { id: 'a', memoryGb: 8 },
  { id: 'b', memoryGb: 8 },
  { id: 'c', memoryGb: 8 },
];
const model: ModelSpec = { id: 'm', layers: 8, pipelines: 2 };
const good: SwarmPlan = { models: [model], pipelines: [pipe('m/0', 'm', st('a', 0, 4), st('b', 4, 8)), pipe('m/1', 'm', st('c', 0, 8))] };
const withStages = (...stages: ReturnType<typeof st>[]): SwarmPlan => ({ models: [model], pipelines: [pipe('m/0', 'm', ...stages)] });

/** The single issue of `code` in the result, which must name `culprit`. */
function issue(issues: readonly PlanIssue[], code: PlanIssue['code'], culprit: string): PlanIssue {
  const found = issues.filter((i) => i.code === code);
  expect(found, `issues were: ${JSON.stringify(issues)}`).toHaveLength(1);
  const first = found[0] as PlanIssue;
  expect(first.message).toContain(culprit);
  return first;
}

const planError = (fn: () => unknown): PlanError => thrown(fn, PlanError);

describe('validatePlan', () => {
  it('accepts a valid hand-written plan', () => {
    expect(validatePlan(good, profiles)).toEqual([]);
  });

  it('reports a gap between stages', () => {
    const found = issue(validatePlan(withStages(st('a', 0, 3), st('b', 4, 8)), profiles), 'Gap', '[3, 4)');
    expect(found.pipelineId).toBe('m/0');
  });

  it('reports a gap before the first stage', () => {
    issue(validatePlan(withStages(st('a', 1, 8)), profiles), 'Gap', '[0, 1)');
  });

  it('reports an overlap between stages', () => {
    issue(validatePlan(withStages(st('a', 0, 5), st('b', 4, 8)), profiles), 'Overlap', '[4, 5)');
  });

  it('reports a pipeline that stops short of the model or runs past it', () => {
    issue(validatePlan(withStages(st('a', 0, 4), st('b', 4, 7)), profiles), 'Coverage', '"m" has 8');
    issue(validatePlan(withStages(st('a', 0, 4), st('b', 4, 9)), profiles), 'Coverage', '[0, 9)');
  });

  it('reports a stage with no layers or bad bounds', () => {
    issue(validatePlan(withStages(st('a', 0, 0), st('b', 0, 8)), profiles), 'BadStage', 'stage 0');
    issue(validatePlan(withStages(st('a', 0, 4), st('b', 4, 8.5)), profiles), 'BadStage', 'stage 1');
  });

  it('reports a pipeline that references an unknown node, naming it', () => {
    const found = issue(validatePlan(withStages(st('a', 0, 4), st('ghost', 4, 8)), profiles), 'UnknownNode', '"ghost"');
    expect(found.nodeId).toBe('ghost');
  });

  it('reports a pipeline of an unknown model', () => {
    issue(validatePlan({ models: [model], pipelines: [pipe('x/0', 'x', st('a', 0, 8))] }, profiles), 'UnknownModel', '"x"');
  });

  it('reports two copies of one model sharing a node', () => {
    const shared: SwarmPlan = { models: [model], pipelines: [pipe('m/0', 'm', st('a', 0, 8)), pipe('m/1', 'm', st('b', 0, 4), st('a', 4, 8))] };
    const found = issue(validatePlan(shared, [{ id: 'a', memoryGb: 16 }, { id: 'b', memoryGb: 8 }]), 'SharedNode', '"a"');
    expect(found.pipelineId).toBe('m/1');
  });

  it('reports a node holding more layers than its memory, across models', () => {
    const two: SwarmPlan = {
      models: [model, { id: 'e', layers: 4, layerGb: 0.5 }],
      pipelines: [pipe('m/0', 'm', st('a', 0, 8)), pipe('m/1', 'm', st('b', 0, 4), st('c', 4, 8)), pipe('e/0', 'e', st('a', 0, 4))],
    };
    // a holds 8·1 + 4·0.5 = 10 GB with 8 GB.
    issue(validatePlan(two, profiles), 'OverCapacity', '"a" holds 10 GB');
  });

  it('reports a pipeline id listed twice', () => {
    const dup: SwarmPlan = { models: [{ ...model, pipelines: 2 }], pipelines: [pipe('m/0', 'm', st('a', 0, 8)), pipe('m/0', 'm', st('b', 0, 8))] };
    issue(validatePlan(dup, profiles), 'DuplicatePipeline', '"m/0"');
  });

  it('reports bad profiles: negative or NaN memory, duplicate ids', () => {
    const bad: NodeProfile[] = [
      { id: 'a', memoryGb: -1 },
      { id: 'b', memoryGb: Number.NaN },
      { id: 'c', memoryGb: 8 },
      { id: 'c', memoryGb: 8 },
    ];
    const issues = validatePlan(good, bad);
    expect(issues.filter((i) => i.code === 'BadProfile').map((i) => i.nodeId)).toEqual(['a', 'b']);
    issue(issues, 'DuplicateNode', '"c"');
  });

  it('reports a model with zero layers', () => {
    issue(validatePlan({ models: [{ id: 'z', layers: 0 }], pipelines: [] }, profiles), 'BadModel', '"z"');
  });

  it('reports a fallback naming no model of the plan', () => {
    issue(validatePlan({ ...good, models: [{ ...model, fallback: 'nope' }] }, profiles), 'BadModel', '"nope"');
  });

  it('returns issues rather than throwing on input that is not a plan', () => {
    expect(validatePlan(null as unknown as SwarmPlan, profiles).length).toBeGreaterThan(0);
    issue(validatePlan({ models: 5, pipelines: [] } as unknown as SwarmPlan, profiles), 'BadModel', 'model');
    expect(validatePlan({ models: [model], pipelines: [null] } as unknown as SwarmPlan, profiles).length).toBeGreaterThan(0);
    expect(validatePlan({ models: [model], pipelines: [{ id: 'm/0', modelId: 'm', stages: [null] }] } as unknown as SwarmPlan, profiles).length).toBeGreaterThan(0);
  });
});

describe('planSwarm input checks', () => {
  it.each<[string, NodeProfile[], ModelSpec[], string]>([
    ['negative memory', [{ id: 'a', memoryGb: -4 }], [{ id: 'm', layers: 1 }], '"a"'],
    ['NaN memory', [{ id: 'a', memoryGb: Number.NaN }], [{ id: 'm', layers: 1 }], '"memoryGb"'],
    ['duplicate node ids', [{ id: 'a', memoryGb: 4 }, { id: 'a', memoryGb: 4 }], [{ id: 'm', layers: 1 }], '"a" is listed twice'],
    ['a zero score', [{ id: 'a', memoryGb: 4, score: 0 }], [{ id: 'm', layers: 1 }], '"score"'],
    ['zero layers', [{ id: 'a', memoryGb: 4 }], [{ id: 'm', layers: 0 }], '"layers"'],
    ['fractional layers', [{ id: 'a', memoryGb: 4 }], [{ id: 'm', layers: 2.5 }], '"layers"'],
    ['zero copies', [{ id: 'a', memoryGb: 4 }], [{ id: 'm', layers: 1, pipelines: 0 }], '"pipelines"'],
    ['no model', [{ id: 'a', memoryGb: 4 }], [], 'model'],
    ['two base models', [{ id: 'a', memoryGb: 4 }], [{ id: 'm', layers: 1, kind: 'base' }, { id: 'n', layers: 1, kind: 'base' }], 'base'],
  ])('rejects %s with InvalidInput naming the culprit', (_, nodes, models, culprit) => {
    const error = planError(() => planSwarm(nodes, { models }));
    expect(error.code).toBe('InvalidInput');
    expect(error.message).toContain(culprit);
  });

  it('rejects a config that is not an object without crashing', () => {
    expect(planError(() => planSwarm([{ id: 'a', memoryGb: 4 }], undefined as unknown as { models: ModelSpec[] })).code).toBe('InvalidInput');
    expect(planError(() => planSwarm(null as unknown as NodeProfile[], { models: [{ id: 'm', layers: 1 }] })).code).toBe('InvalidInput');
  });
});
