/**
 * `hecate-node conformance`: drives a stage server through the wire protocol as an orchestrator
 * would (docs/engine.md, "Conformance") and says which of its rules hold. The runner stands in for
 * the orchestrator the agent joins, so an agent written in any language is checked as it runs.
 */
import { runChecks, type CheckResult } from './conformance-checks.js';
import { startMockOrchestrator } from './mock-orchestrator.js';
import { StageProbe } from './stage-probe.js';

/** Options of {@link runConformance}. */
export interface ConformanceOptions {
  /** The agent's base URL, as it says in its join; undefined: the first agent that joins. */
  readonly agent?: string;
  /** The swarm secret the agent was given; without it the signature checks are not run (and say so). */
  readonly secret?: Uint8Array;
  /** Where the stand-in orchestrator listens for the join. @defaultValue 127.0.0.1, any free port */
  readonly host?: string;
  readonly port?: number;
  /** The model the join's answer gives the agent. @defaultValue `{ id: 'base', layers: 12 }` */
  readonly model?: { readonly id: string; readonly layers: number };
  /** How long the join and the first heartbeat may take. @defaultValue 30000 */
  readonly timeoutMs?: number;
  /** Told the stand-in's URL once it listens (start the agent with `--join` to it). */
  readonly listening?: (url: string) => void;
}

/** What held and what did not. */
export interface ConformanceReport {
  readonly agent: string | undefined;
  readonly checks: readonly CheckResult[];
  readonly passed: number;
  readonly failed: number;
}

/** Runs every check against one agent; never throws for the agent's faults (they are failed checks). */
export async function runConformance(options: ConformanceOptions = {}): Promise<ConformanceReport> {
  const model = options.model ?? { id: 'base', layers: 12 };
  const timeoutMs = options.timeoutMs ?? 30_000;
  const orchestrator = await startMockOrchestrator({ host: options.host ?? '127.0.0.1', port: options.port ?? 0, model, ...(options.secret !== undefined ? { secret: options.secret } : {}) });
  const checks: CheckResult[] = [];
  let agent = options.agent?.replace(/\/+$/, '');
  try {
    options.listening?.(orchestrator.url);
    const join = await orchestrator.joined(agent, timeoutMs);
    const refused = orchestrator.log.refused.length > 0 ? ` (refused: ${orchestrator.log.refused[0]})` : '';
    checks.push({ name: 'join', ok: join !== undefined, detail: join !== undefined ? `joined as "${join.id}" from ${join.url}` : `no join within ${timeoutMs} ms at ${orchestrator.url}${refused}` });
    agent ??= join?.url.replace(/\/+$/, '');
    if (join !== undefined) {
      const beat = await orchestrator.heartbeat(join.id, timeoutMs);
      checks.push({ name: 'heartbeat', ok: beat, detail: beat ? 'heartbeats signed and received' : `no heartbeat within ${timeoutMs} ms` });
    }
    if (agent === undefined) return report(undefined, checks);
    let engine = 'unknown';
    let id = join?.id ?? 'unknown';
    try {
      const health = (await (await fetch(`${agent}/v1/health`, { signal: AbortSignal.timeout(timeoutMs) })).json()) as { engine?: unknown; id?: unknown };
      engine = typeof health.engine === 'string' ? health.engine : 'unknown';
      if (join === undefined && typeof health.id === 'string') id = health.id; // its calls are signed for it
      checks.push({ name: 'health', ok: typeof health.engine === 'string', detail: `GET /v1/health: engine ${JSON.stringify(health.engine)}` });
    } catch (error) {
      checks.push({ name: 'health', ok: false, detail: `GET /v1/health: ${error instanceof Error ? error.message : String(error)}` });
    }
    const probe = new StageProbe(agent, id, options.secret, timeoutMs);
    const runId = `conformance-${Date.now().toString(36)}`;
    checks.push(...(await runChecks({ probe, model, engine, signed: options.secret !== undefined, runId })));
    if (options.secret === undefined) checks.push({ name: 'signatures', ok: false, detail: 'not checked: give the swarm secret (--token-file) to check that unsigned, forged and replayed calls are refused' });
    return report(agent, checks);
  } finally {
    await orchestrator.close();
  }
}

function report(agent: string | undefined, checks: readonly CheckResult[]): ConformanceReport {
  const passed = checks.filter((c) => c.ok).length;
  return { agent, checks, passed, failed: checks.length - passed };
}
