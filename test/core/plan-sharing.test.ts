/**
 * The rule for a node serving several models (docs/cost.md "When a node serves several models"):
 * a stage on a node that serves another model must raise counted-once throughput by more than a
 * hop's worth.
 */
import { describe, expect, it } from 'vitest';
import { worthSharing } from '../../src/core/plan-sharing.js';
import type { ModelSpec, NodeProfile, Pipeline } from '../../src/index.js';
import { pipe, st } from './fixtures.js';

const models: ModelSpec[] = [{ id: 'a', layers: 8 }, { id: 'b', layers: 8, kind: 'expert' }];
const profiles: NodeProfile[] = [{ id: 'x', memoryGb: 32, score: 4 }, { id: 'y', memoryGb: 32, score: 4 }, { id: 'slow', memoryGb: 32, score: 1 }];

describe('worthSharing', () => {
  it('accepts a copy on nodes that serve no other model', () => {
    const before: Pipeline[] = [pipe('a/0', 'a', st('x', 0, 8))];
    expect(worthSharing(models, profiles, before, [...before, pipe('b/0', 'b', st('y', 0, 8))], 1)).toBe(true);
  });

  it('refuses a copy on a node another model already keeps busy: it adds no compute', () => {
    const before: Pipeline[] = [pipe('a/0', 'a', st('x', 0, 8))];
    expect(worthSharing(models, profiles, before, [...before, pipe('b/0', 'b', st('x', 0, 8))], 1)).toBe(false);
  });

  it("accepts a shared stage on a node whose other copy waits on a slower one: its idle speed is the gain", () => {
    // a/0 runs at 1/4 (slow holds 4 layers); x works only 4 × 1/4 = 1 of its 4.
    const before: Pipeline[] = [pipe('a/0', 'a', st('x', 0, 4), st('slow', 4, 8))];
    expect(worthSharing(models, profiles, before, [...before, pipe('b/0', 'b', st('x', 0, 8))], 1)).toBe(true);
  });

  it('applies to a single model never (its copies never share a node)', () => {
    const one: ModelSpec[] = [{ id: 'a', layers: 8 }];
    const before: Pipeline[] = [pipe('a/0', 'a', st('x', 0, 8))];
    expect(worthSharing(one, profiles, before, [...before, pipe('a/1', 'a', st('y', 0, 8))], 1)).toBe(true);
  });
});
