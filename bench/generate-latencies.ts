/** What the edge benches time: `samples` 1-step generations one after another, their p50 and p99 and how many failed. */

/** The q-quantile of `xs` (nearest rank, no interpolation). */
export const quantile = (xs: readonly number[], q: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? Number.NaN;

/** Runs `samples` 1-step generations of model `base` at serve `url` one after another. */
export async function generateLatencies(url: string, samples: number): Promise<{ p50: number; p99: number; failed: number }> {
  const ms: number[] = [];
  let failed = 0;
  for (let i = 0; i < samples; i++) {
    const started = performance.now();
    const r = await fetch(`${url}/v1/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'base', prompt: `p${i}`, steps: 1 }) });
    await r.arrayBuffer();
    if (r.status !== 200) failed++;
    ms.push(performance.now() - started);
  }
  return { p50: quantile(ms, 0.5), p99: quantile(ms, 0.99), failed };
}
