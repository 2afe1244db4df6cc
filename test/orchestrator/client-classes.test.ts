/**
 * `--classes`: the file is checked (an error names the file and the JSON path), a caller's class
 * comes from its token, an open class may be named in a header but a token class may not, and a
 * class past its maxInFlight is refused 429 with a retry-after.
 */
import { describe, expect, it } from 'vitest';
import { loadClientClasses } from '../../src/cli/client-classes-file.js';
import { ClassLimits, classOf, classTokens, type ClientClasses } from '../../src/orchestrator/client-classes.js';
import { ServeError } from '../../src/wire/serve-error.js';

const TOKENS: Record<string, string> = { '/cfg/critical.token': 'critical-token-0123456789\n', '/cfg/other.token': 'critical-token-0123456789' };
const read = (path: string): string => {
  const t = TOKENS[path];
  if (t === undefined) throw new Error('ENOENT: no such file');
  return t;
};
const FILE = '/cfg/classes.json';
const good = { default: 'standard', classes: [{ name: 'critical', priority: 10, maxInFlight: 2, deadlineMs: 5000, tokenFile: 'critical.token' }, { name: 'standard' }, { name: 'batch', priority: -1 }] };

function loaded(value: unknown = good): ClientClasses {
  const l = loadClientClasses(JSON.stringify(value), FILE, read);
  if (!l.ok) throw l.error;
  return l.value;
}

function thrown(f: () => unknown): ServeError {
  try {
    f();
  } catch (error) {
    if (error instanceof ServeError) return error;
    throw error;
  }
  throw new Error('expected a ServeError');
}

describe('loadClientClasses', () => {
  it('reads classes with their defaults and the token text, trimmed, relative to the file', () => {
    const c = loaded();
    expect(c.defaultClass.name).toBe('standard');
    expect(c.classes.map((x) => [x.name, x.priority, x.maxInFlight, x.deadlineMs, x.token])).toEqual([
      ['critical', 10, 2, 5000, 'critical-token-0123456789'],
      ['standard', 0, Infinity, undefined, undefined],
      ['batch', -1, Infinity, undefined, undefined],
    ]);
    expect(classTokens(c)).toEqual(['critical-token-0123456789']);
  });

  it.each([
    [[], '$: must be an object'],
    [{ classes: [] }, '$.classes: must be an array of 1 to 64'],
    [{ classes: [{ name: 'a' }], extra: 1 }, '$.extra: unknown key'],
    [{ classes: [{ name: 'a b' }] }, '$.classes[0].name: must be 1-64 letters'],
    [{ classes: [{ name: 'a' }, { name: 'a' }] }, '$.classes[1].name: duplicate class "a"'],
    [{ classes: [{ name: 'a', priority: 1.5 }] }, '$.classes[0].priority: must be an integer'],
    [{ classes: [{ name: 'a', maxInFlight: 0 }] }, '$.classes[0].maxInFlight: must be an integer >= 1'],
    [{ classes: [{ name: 'a', deadlineMs: -1 }] }, '$.classes[0].deadlineMs: must be a number > 0'],
    [{ classes: [{ name: 'a', tokenFile: 'missing.token' }] }, '$.classes[0].tokenFile: cannot read missing.token'],
    [{ classes: [{ name: 'a', tokenFile: 'critical.token' }, { name: 'b', tokenFile: 'other.token' }] }, '$.classes[1].tokenFile: the same token as class "a"'],
    [{ classes: [{ name: 'a', speed: 1 }] }, '$.classes[0].speed: unknown key'],
    [{ default: 'z', classes: [{ name: 'a' }] }, '$.default: must name one of the classes (a)'],
  ])('refuses %j naming the file and path', (value, message) => {
    const l = loadClientClasses(JSON.stringify(value), FILE, read);
    expect(l.ok).toBe(false);
    if (!l.ok) expect(l.error.message).toContain(`${FILE}: ${message}`);
  });
});

describe('classOf and ClassLimits', () => {
  const c = loaded();
  it('a token names its class; an open class by header; a token class not by header; else the default', () => {
    expect(classOf(c, { authorization: 'Bearer critical-token-0123456789' }).name).toBe('critical');
    expect(classOf(c, { 'x-hecate-class': 'batch' }).name).toBe('batch');
    expect(classOf(c, {}).name).toBe('standard');
    expect(classOf(c, { authorization: 'Bearer not-a-class-token-at-all' }).name).toBe('standard');
    const claimed = thrown(() => classOf(c, { 'x-hecate-class': 'critical' }));
    expect([claimed.status, claimed.code, claimed.field]).toEqual([401, 'Unauthenticated', 'x-hecate-class']);
    const unknown = thrown(() => classOf(c, { 'x-hecate-class': 'gold' }));
    expect([unknown.status, unknown.code, unknown.field]).toEqual([400, 'InvalidRequest', 'x-hecate-class']);
  });

  it('refuses a class past its maxInFlight with 429 RateLimited and a retry-after, until one leaves', () => {
    const limits = new ClassLimits();
    const critical = c.classes[0];
    if (critical === undefined) throw new Error('no class');
    limits.enter(critical, 1000);
    limits.enter(critical, 1000);
    const refused = thrown(() => limits.enter(critical, 1000));
    expect([refused.status, refused.code, refused.retryAfterMs]).toEqual([429, 'RateLimited', 1000]);
    expect(refused.message).toMatch(/class "critical" has 2 generations under way/);
    expect(limits.counts().get('critical')).toBe(2);
    limits.leave(critical);
    limits.enter(critical, 1000);
    limits.leave(critical);
    limits.leave(critical);
    expect(limits.counts().has('critical')).toBe(false);
  });
});
