/**
 * The cancellation run of serve (docs/serve.md, "Cancellation"), shared by the real-process test
 * and `bench/serve-cancel.ts`: `generates` concurrent POST /v1/generate, every other client hanging
 * up `abortAfterMs` (or a time spread over that range) into its generation; then how long until every agent holds no session and runs
 * no call, and the orchestrator's leases (and admission queue, when it exports one) are empty.
 */

/** What the run saw. */
export interface CancelFigures {
  readonly generates: number;
  /** Answered 200 (the clients that stayed). */
  readonly ok: number;
  /** Clients that hung up. */
  readonly hungUp: number;
  /** Answers other than 200 to clients that stayed, as `status code`. */
  readonly failures: readonly string[];
  /** Wall ms from the last client done (answered or hung up) until every agent held 0 sessions and ran 0 calls. */
  readonly drainedMs: number;
  /** Per agent, the most sessions it held at once while the run went on. */
  readonly peakSessions: readonly number[];
  /** The orchestrator's `/metrics` once drained. */
  readonly metrics: ReadonlyMap<string, number>;
}

interface Health {
  readonly sessions: number;
  readonly calls: number;
}

const health = async (url: string): Promise<Health> => (await fetch(`${url}/v1/health`)).json() as Promise<Health>;

function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/** Runs it against a started orchestrator `url` and its agents' stage servers `agents`. */
export async function cancelRun(url: string, agents: readonly string[], options: { generates: number; steps: number; abortAfterMs: number | readonly [number, number]; timeoutMs: number; headers?: Record<string, string> }): Promise<CancelFigures> {
  const peaks = agents.map(() => 0);
  let watching = true;
  const watch = (async () => {
    while (watching) {
      const seen = await Promise.all(agents.map(health));
      seen.forEach((h, i) => (peaks[i] = Math.max(peaks[i] ?? 0, h.sessions)));
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  let ok = 0;
  let hungUp = 0;
  const failures: string[] = [];
  await Promise.all(Array.from({ length: options.generates }, async (_, i) => {
    const controller = new AbortController();
    const leaves = i % 2 === 1;
    // A range spreads the hang-ups evenly over it, the same for the same i.
    const [from, to] = typeof options.abortAfterMs === 'number' ? [options.abortAfterMs, options.abortAfterMs] : options.abortAfterMs;
    const timer = leaves ? setTimeout(() => controller.abort(), from + ((to - from) * ((i * 0.618034) % 1))) : undefined;
    try {
      const response = await fetch(`${url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json', ...options.headers }, body: JSON.stringify({ model: 'base', prompt: `cancel ${i}`, steps: options.steps }), signal: controller.signal });
      const text = await response.text();
      if (response.ok) ok++;
      else failures.push(`${response.status} ${text.slice(0, 200)}`);
    } catch (error) {
      if (controller.signal.aborted) hungUp++;
      else failures.push(String(error));
    } finally {
      clearTimeout(timer);
    }
  }));
  const done = Date.now();
  let drainedMs = Number.NaN;
  for (;;) {
    const seen = await Promise.all(agents.map(health));
    if (seen.every((h) => h.sessions === 0 && h.calls === 0)) {
      drainedMs = Date.now() - done;
      break;
    }
    if (Date.now() - done > options.timeoutMs) throw new Error(`agents still hold sessions ${options.timeoutMs} ms after the last client: ${JSON.stringify(seen)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
  watching = false;
  await watch;
  const metrics = parse(await (await fetch(`${url}/metrics`)).text());
  return { generates: options.generates, ok, hungUp, failures, drainedMs, peakSessions: peaks, metrics };
}
