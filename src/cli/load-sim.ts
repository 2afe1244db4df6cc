/**
 * `hecate-node load-sim`: runs the seeded load simulation and prints the results table; with
 * `--out DIR` also writes results.json, results.md and one latency-CDF SVG per workload.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { overloadTable, runOverloadComparison, W8_DEFAULT_REQUESTS, W8_ID, type OverloadComparison } from '../sim/load/overload-comparison.js';
import { W7_DEFAULT_REQUESTS, W7_FULL_REQUESTS, W7_WORK_LIMIT, w7Scale } from '../sim/load/prefix-requests.js';
import { runPrefixSim, PREFIX_POLICIES, type PrefixSimResult } from '../sim/load/prefix-sim.js';
import { LOAD_SIM_LIMITS, runLoadSim, selectWorkloads, type LoadSimResult } from '../sim/load/run.js';
import { runSessionSim, sessionTable, W6_ID, type SessionSimResult } from '../sim/load/session-sim.js';
import { cdfSvgs } from '../sim/load/svg.js';
import { resultsTable, sharesTable } from '../sim/load/table.js';
import { PREFIX_WORKLOADS } from '../sim/load/prefix-workloads.js';
import { burstyFieldIssue, DEFAULT_BURSTY, WORKLOADS, type BurstyShape } from '../sim/load/workloads.js';
import { helpText, integerFlag, parseCommandArgs, stringFlag, UsageError, type ArgsSpec } from './args.js';
import type { CliIO, Command } from './command.js';
import { commandSummary } from './commands.js';
import { extraSections, prefixSection, resultsDocument, soloMarkdown, workloadFlag, type ExtraResults } from './load-sim-document.js';
import { selectLoadSim } from './load-sim-selection.js';
import { prepareOutputDir } from './output.js';

/** W6's mean steps per session (32 to 128): its unit of work for the progress lines. */
const W6_STEPS_PER_SESSION = 80;

/** Runs × requests from which a simulation reports progress on stderr when it is not a terminal (a few seconds of work). */
export const PROGRESS_LINES_FROM = 100_000;

const spec: ArgsSpec = {
  flags: {
    seed: { type: 'string', value: 'n', description: 'First seed (default 1); runs use seeds n, n+1, ...' },
    seeds: { type: 'string', value: 'n', description: 'Number of seeds, 1-100 (default 10); results are medians over them.' },
    workload: { type: 'string', value: 'id[,id...]', description: 'Workloads to run, by id or prefix (default all: W1-W6; W7 and W8 run only when named).', multiple: true },
    requests: { type: 'string', value: 'n', description: `Requests per run, 100-1000000 (default 20000; W8 ${W8_DEFAULT_REQUESTS}; W7 at most ${W7_FULL_REQUESTS}, default ${W7_DEFAULT_REQUESTS}: half size).` },
    sessions: { type: 'string', value: 'n', description: `W6's sessions per run, 1-10000 (default 48).` },
    w2: { type: 'string', value: 'on=x,off=x,period=ms,every=ms', description: `W2's shape: load while on and off, mean period, mean time between bursts (default on=${DEFAULT_BURSTY.onRho},off=${DEFAULT_BURSTY.offRho},period=${DEFAULT_BURSTY.periodMs},every=${DEFAULT_BURSTY.burstEveryMs}).` },
    out: { type: 'string', value: 'dir', description: 'Also write results.json, results.md and cdf-<workload>.svg into this directory.' },
    json: { type: 'boolean', description: 'Print the JSON document instead of the table.' },
  },
};

const SUMMARY = commandSummary('load-sim');
const DETAILS = `Workloads: ${WORKLOADS.map((w) => w.id).join(', ')}, ${W6_ID} (sessions that resume
from a failed stage beside restart from scratch; docs/sessions.md). Not in the default run, only
when named: ${PREFIX_WORKLOADS.map((w) => w.id).join(', ')} (--workload w7: prefix sharing against
the field's prefix-aware routers, docs/prefix-cache.md; --requests n builds them at n/${W7_FULL_REQUESTS}
of full size) and ${W8_ID} (--workload w8: overload through admission, none / fifo / ours at
150% and 80% load, docs/admission.md).
Policies: wrr, random, least-outstanding, p2c, p2c-peak-ewma, seed-argmin (the real Swarm),
ours-reserve (the real Swarm with in-flight leases), ours-latency-weights (the same with the
capability and hop priors off: an experiment), ours-detect (ours finding failures itself:
the phi detector on the monitor's samples and ejection, no health reports), oracle-sed
(reference: reads the truth).
Bounds: --seeds × --requests at most ${LOAD_SIM_LIMITS.work}, --seeds × --sessions at most
${LOAD_SIM_LIMITS.sessionWork}; W7: --requests at most ${W7_FULL_REQUESTS}, --seeds × --requests at most ${W7_WORK_LIMIT} (docs/inputs.md). Progress goes to
stderr: a bar on a terminal, else a line at each tenth of a long run. The same flags print the same bytes.

Example:
  hecate-node load-sim --seeds 10 --out bench/load-sim`;

/** The `load-sim` command. */
export const command: Command = {
  name: 'load-sim',
  summary: SUMMARY,
  async run(argv, io) {
    const args = parseCommandArgs(argv, spec);
    if (args.values['help'] === true) {
      io.stdout(helpText('load-sim', SUMMARY, spec, DETAILS));
      return 0;
    }
    const seed = integerFlag(args, 'seed', 0, 2 ** 31 - 1) ?? 1;
    const seeds = integerFlag(args, 'seeds', 1, LOAD_SIM_LIMITS.seeds) ?? 10;
    const requestsFlag = integerFlag(args, 'requests', 100, LOAD_SIM_LIMITS.requests);
    const requests = requestsFlag ?? 20_000;
    const raw = args.values['workload'];
    const workloads = (Array.isArray(raw) ? raw : []).flatMap((w) => w.split(',')).map((w) => w.trim()).filter((w) => w.length > 0);
    const sessions = integerFlag(args, 'sessions', 1, LOAD_SIM_LIMITS.sessions) ?? 48;
    const { requestIds, runRequests, runW6, w7, runW8 } = selectLoadSim(workloads);
    const w7Requests = requestsFlag ?? W7_DEFAULT_REQUESTS;
    if (w7.length > 0 && w7Requests > W7_FULL_REQUESTS) {
      throw new UsageError(`flag --requests: W7 holds ${W7_FULL_REQUESTS} requests at full size, got ${w7Requests} (docs/inputs.md)`);
    }
    if (w7.length > 0 && seeds * w7Requests > W7_WORK_LIMIT) {
      throw new UsageError(`--seeds × --requests is ${seeds * w7Requests}, over the limit of ${W7_WORK_LIMIT} for W7 (docs/inputs.md); use fewer seeds or requests`);
    }
    // Each bound only for what runs: W6 alone reads no --requests, the request workloads no --sessions.
    if (runW8 && seeds * (requestsFlag ?? W8_DEFAULT_REQUESTS) > LOAD_SIM_LIMITS.work) {
      throw new UsageError(`--seeds × --requests is ${seeds * (requestsFlag ?? W8_DEFAULT_REQUESTS)}, over the limit of ${LOAD_SIM_LIMITS.work} for ${W8_ID} (docs/inputs.md); use fewer seeds or requests`);
    }
    if (runRequests && seeds * requests > LOAD_SIM_LIMITS.work) {
      throw new UsageError(`--seeds × --requests is ${seeds * requests}, over the limit of ${LOAD_SIM_LIMITS.work} (docs/inputs.md); use fewer seeds or requests`);
    }
    if (runW6 && seeds * sessions > LOAD_SIM_LIMITS.sessionWork) {
      throw new UsageError(`--seeds × --sessions is ${seeds * sessions}, over the limit of ${LOAD_SIM_LIMITS.sessionWork} for ${W6_ID} (docs/inputs.md); use fewer seeds or sessions`);
    }
    try {
      if (runRequests) selectWorkloads(requestIds);
    } catch (error) {
      throw new UsageError(`flag --workload: ${(error as Error).message}`);
    }
    const bursty = w2Flag(stringFlag(args, 'w2'));
    const out = stringFlag(args, 'out');
    if (out !== undefined && out.length === 0) throw new UsageError('flag --out needs a non-empty directory');
    // Before the run: a directory that cannot be written fails now, not after minutes of simulation.
    const outDir = out === undefined ? undefined : prepareOutputDir(io.cwd, out, '--out');
    let result: LoadSimResult | undefined;
    if (runRequests) {
      const progress = progressReporter(io, requests);
      result = runLoadSim({ seed, seeds, requests, workloads: requestIds, ...(bursty !== undefined ? { bursty } : {}), onProgress: progress.update });
      progress.end();
    }
    let w6: SessionSimResult | undefined;
    if (runW6) {
      const progress = progressReporter(io, sessions * W6_STEPS_PER_SESSION);
      w6 = await runSessionSim({ seed, seeds, sessions, onProgress: progress.update });
      progress.end();
    }
    let prefix: PrefixSimResult | undefined;
    if (w7.length > 0) {
      const progress = progressReporter(io, w7Requests);
      const total = w7.length * PREFIX_POLICIES.length * seeds;
      let done = 0;
      prefix = runPrefixSim({ seed, seeds, scale: w7Scale(w7Requests), workloads: w7, onProgress: (label) => progress.update(++done, total, label) });
      progress.end();
    }
    let overload: OverloadComparison | undefined;
    if (runW8) {
      const progress = progressReporter(io, requestsFlag ?? W8_DEFAULT_REQUESTS);
      overload = await runOverloadComparison({ seed, seeds, requests: requestsFlag ?? W8_DEFAULT_REQUESTS, onProgress: progress.update });
      progress.end();
    }
    const extra = { prefix, overload };
    if (outDir !== undefined) writeResults(outDir, result, w6, extra);
    if (args.values['json'] === true) {
      io.stdout(`${JSON.stringify(resultsDocument(result, w6, extra), null, 2)}\n`);
    } else {
      const tables = [result === undefined ? '' : resultsTable(result), w6 === undefined ? '' : sessionTable(w6), prefix === undefined ? '' : prefixSection(prefix), overload === undefined ? '' : overloadTable(overload)];
      io.stdout(tables.filter((t) => t.length > 0).join('\n'));
    }
    return 0;
  },
};

const W2_KEYS: ReadonlyMap<string, keyof BurstyShape> = new Map([
  ['on', 'onRho'],
  ['off', 'offRho'],
  ['period', 'periodMs'],
  ['every', 'burstEveryMs'],
]);

/** Parses `--w2 on=0.7,every=3000` into a W2 shape. @throws {UsageError} naming the bad part, in the flag's own words. */
export function w2Flag(raw: string | undefined): Partial<BurstyShape> | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string') throw new UsageError('flag --w2 needs a value such as on=0.7,every=3000');
  const usage = [...W2_KEYS.keys()].map((k) => `${k}=<number>`).join(', ');
  const parts = raw.split(',').map((p) => p.trim()).filter((p) => p.length > 0);
  if (parts.length === 0) throw new UsageError(`flag --w2 needs at least one of ${usage}`);
  const shape: { -readonly [K in keyof BurstyShape]?: number } = {};
  for (const part of parts) {
    const [rawKey = '', value = '', ...rest] = part.split('=');
    const key = rawKey.trim();
    const field = W2_KEYS.get(key);
    if (field === undefined || rest.length > 0) throw new UsageError(`flag --w2: "${part}" is not one of ${usage}`);
    if (shape[field] !== undefined) throw new UsageError(`flag --w2: "${key}" is given twice`);
    if (!/^\d+(\.\d+)?([eE][+-]?\d+)?$/.test(value.trim())) throw new UsageError(`flag --w2: "${key}" must be a decimal number, got "${value}"`);
    const n = Number(value.trim());
    const issue = burstyFieldIssue(field, n);
    if (issue !== undefined) throw new UsageError(`flag --w2: "${key}" ${issue}`);
    shape[field] = n;
  }
  return shape;
}

/** ` --w2 on=…` for a W2 shape other than the default, else nothing. */
function w2Text(shape: BurstyShape): string {
  const keys = [...W2_KEYS];
  if (keys.every(([, f]) => shape[f] === DEFAULT_BURSTY[f])) return '';
  return ` --w2 ${keys.map(([k, f]) => `${k}=${shape[f]}`).join(',')}`;
}

/** Writes the JSON, the Markdown tables and the SVGs into `dir` (W6's, W7's and W8's figures beside them when they ran). */
export function writeResults(dir: string, result: LoadSimResult | undefined, w6?: SessionSimResult, extra: ExtraResults = {}): void {
  mkdirSync(dir, { recursive: true });
  if (result === undefined) {
    const md = soloMarkdown(w6, extra);
    if (md === undefined) return;
    writeFileSync(resolve(dir, 'results.json'), `${JSON.stringify(resultsDocument(undefined, w6, extra), null, 2)}\n`);
    writeFileSync(resolve(dir, 'results.md'), md);
    return;
  }
  writeFileSync(resolve(dir, 'results.json'), `${JSON.stringify(resultsDocument(result, w6, extra), null, 2)}\n`);
  const svgs = cdfSvgs(result);
  const links = Object.keys(svgs).map((f) => `- [${f.replace(/^cdf-|\.svg$/g, '')}](${f})`);
  const sessions = w6 === undefined ? '' : `\n## Sessions under node kills (W6)\n\n${sessionTable(w6)}`;
  writeFileSync(
    resolve(dir, 'results.md'),
    `# Load simulation results\n\nGenerated by \`hecate-node load-sim${workloadFlag(result, w6, extra)} --seed ${result.seeds[0]} --seeds ${result.seeds.length} --requests ${result.requestsPerRun}${w2Text(result.bursty)}${w6 === undefined ? '' : ` --sessions ${w6.sessionsPerRun}`}\`.\n\n${resultsTable(result)}\n## Traffic share against capacity share (medians)\n\n${sharesTable(result)}${sessions}${extraSections(extra)}\n## Latency CDFs\n\n${links.join('\n')}\n`,
  );
  for (const [file, svg] of Object.entries(svgs)) writeFileSync(resolve(dir, file), svg);
}

/**
 * Progress on stderr: a one-line bar redrawn in place on a terminal; otherwise, for a
 * simulation of at least {@link PROGRESS_LINES_FROM} runs × requests, one line at each tenth of
 * the runs (counted, not timed, so the same flags print the same lines).
 */
function progressReporter(io: CliIO, requests: number): { update: (done: number, total: number, label: string) => void; end: () => void } {
  if (io.stderrIsTTY === true) {
    let shown = false;
    return {
      update(done, total, label) {
        const width = 30;
        const filled = Math.round((done / total) * width);
        io.stderr(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} ${label}`.padEnd(100).slice(0, 100));
        shown = true;
      },
      end() {
        if (shown) io.stderr('\r'.padEnd(101) + '\r');
      },
    };
  }
  let lastTenth = 0;
  return {
    update(done, total, label) {
      if (total * requests < PROGRESS_LINES_FROM) return;
      const tenth = Math.floor((done * 10) / total);
      if (tenth === lastTenth) return;
      lastTenth = tenth;
      io.stderr(`hecate-node load-sim: ${tenth * 10}% (${done}/${total} runs, last: ${label})\n`);
    },
    end() {},
  };
}
