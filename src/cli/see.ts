/**
 * The "see it" flags of `swarm-sim`: `--inspect URL` streams the run's inspection events to a
 * WebSocket inspector, `--html FILE` writes the run as an HTML report. Both wrap one run.
 */
import { writeFileSync } from 'node:fs';
import { InputError } from '../sim/input-error.js';
import { renderHtmlReport, type ReportFrame } from '../sim/report-html.js';
import type { SwarmSimOptions, SwarmSimReport } from '../sim/swarm-sim.js';
import type { Topology } from '../sim/topology.js';
import { stringFlag, UsageError, type ParsedArgs } from './args.js';
import type { CliIO } from './command.js';
import type { LiveInspector } from './inspect.js';
import { checkOutputFile } from './output.js';

/**
 * Runs `run` once with what `--inspect`, `--inspect-remote` and `--html` ask for. The inspector is
 * connected before the run (a refused connection is a usage error, nothing runs) and drained after
 * it; the HTML file is written before the caller prints anything.
 * @throws {UsageError} for a bad flag or an inspector that does not answer; {@link InputError} when the file cannot be written.
 */
export async function seeIt(
  args: ParsedArgs,
  io: CliIO,
  topology: Topology,
  options: SwarmSimOptions,
  run: (topology: Topology, options: SwarmSimOptions) => SwarmSimReport,
): Promise<SwarmSimReport> {
  const url = stringFlag(args, 'inspect');
  const html = stringFlag(args, 'html');
  const allowRemote = args.values['inspect-remote'] === true;
  if (allowRemote && url === undefined) throw new UsageError('flag --inspect-remote only makes sense with --inspect <ws-url>');
  if (html === '') throw new UsageError('flag --html needs a file name');
  // Before the run: a file that cannot be written fails now, with exit 2.
  const htmlPath = html === undefined ? undefined : checkOutputFile(io.cwd, html, '--html');
  const live = url === undefined ? undefined : await connect(url, allowRemote);
  const frames: ReportFrame[] = [];
  let report: SwarmSimReport;
  try {
    report = run(topology, {
      ...options,
      ...(live === undefined ? {} : { inspect: live.inspect }),
      ...(html === undefined ? {} : { onStep: (_step, state) => void frames.push({ plan: state.plan, nodes: state.nodes }) }),
    });
  } finally {
    const flushed = await live?.close();
    if (flushed !== undefined && flushed.dropped > 0) {
      io.stderr(`hecate-node swarm-sim: the inspector at ${url ?? ''} closed early: ${flushed.dropped} of ${flushed.sent + flushed.dropped} inspection events not sent\n`);
    }
  }
  if (html !== undefined && htmlPath !== undefined) {
    const page = renderHtmlReport({ report, frames, profiles: topology.nodes, title: `hecate-node swarm-sim${options.source ? ` · ${options.source}` : ''}` });
    try {
      writeFileSync(htmlPath, page);
    } catch (cause) {
      const code = (cause as { code?: unknown } | null)?.code;
      const reason = code === 'ENOENT' ? 'its directory does not exist' : code === 'EISDIR' ? 'is a directory' : code === 'EACCES' ? 'permission denied' : String(cause);
      throw new InputError(html, '', `cannot write the HTML report: ${reason}`, { cause });
    }
  }
  return report;
}

/**
 * Connects to the inspector, loading `ws` and `@statelyai/inspect` only now: they are optional
 * peer dependencies that only `--inspect` needs, so the library and the other commands never load
 * them. When they are missing, the import fails with `ERR_MODULE_NOT_FOUND` and `hecate-node`
 * names the install line (main.ts, peers.ts).
 * @throws {UsageError} from {@link connectInspector}.
 */
async function connect(url: string, allowRemote: boolean): Promise<LiveInspector> {
  const inspect = await import('./inspect.js');
  return inspect.connectInspector(url, { allowRemote });
}
