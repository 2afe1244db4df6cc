/** `hecate-node agent`: a stand-in stage server that joins an orchestrator (docs/serve.md). */
import { startAgent } from '../agent/agent.js';
import { startUpstreamAgent } from '../agent/upstream/upstream-agent.js';
import { UPSTREAM_FLAGS, upstreamOptions } from './upstream-flags.js';
import { OPENAI_ENGINE_FLAGS, openAIEngineOptions, wholeModelOf } from './openai-engine-flags.js';
import { helpText, integerFlag, parseCommandArgs, requiredFlag, stringFlag, UsageError, type ArgsSpec, type ParsedArgs } from './args.js';
import { registerEngineOpenAIRoutes } from '../agent/openai/engine-openai-routes.js';
import { systemClock } from '../runtime/clock.js';
import type { Command } from './command.js';
import { commandSummary } from './commands.js';
import { listening, numberFlag, PID_FILE_FLAG, untilSignal, withPidFile } from './process-flags.js';
import { AGENT_TRUST_FLAGS, agentTrust } from './trust-flags.js';
import type { StageEngine } from '../agent/stage-engine.js';
import { modelIdOf } from '../model/model-id.js';

/**
 * The reference engine on one model directory, loaded lazily (it pulls in the WebAssembly
 * kernels): its KV caches bounded by `kvMb`, else by the KV memory the plan gives it (`memoryGb`
 * less the weights of the layers it holds).
 */
async function referenceEngine(dir: string, memoryGb: number, kvMb: number | undefined): Promise<StageEngine> {
  const { ReferenceEngine } = await import('../agent/engines/reference/reference-engine.js');
  try {
    const bound = kvMb === undefined ? { memoryBytes: Math.max(1, Math.floor(memoryGb * 1e9)) } : { kvMemoryBytes: Math.max(1, Math.floor(kvMb * 1e6)) };
    return new ReferenceEngine({ models: new Map([[modelIdOf(dir), dir]]), ...bound });
  } catch (error) {
    throw new UsageError(`flag --model: ${(error as Error).message}`, { cause: error });
  }
}

const spec: ArgsSpec = {
  flags: {
    id: { type: 'string', value: 'id', description: 'Node id (required); restart with the same id to rejoin as the same node.' },
    memory: { type: 'string', value: 'GB', description: 'Memory it offers, in GB (required): how many layers it can hold.' },
    score: { type: 'string', value: 'S', description: 'Capability (higher is faster) (required): a stage takes layers × tokens × per-layer-ms ÷ score.' },
    join: { type: 'string', value: 'url', description: 'The orchestrator, e.g. http://127.0.0.1:8080 (required); several orchestrators of one replicated swarm separated by commas: it talks to the first and moves to the next when one cannot be reached.' },
    port: { type: 'string', value: 'n', description: 'Port of its stage server (default 0: any free port).' },
    host: { type: 'string', value: 'addr', description: 'Address to bind (default 127.0.0.1).' },
    'per-layer-ms': { type: 'string', value: 'ms', description: 'Real ms one layer takes for one token at score 1 (default 2).' },
    jitter: { type: 'string', value: 'r', description: 'Relative jitter of a stage\'s time, 0-0.9 (default 0.2).' },
    seed: { type: 'string', value: 'n', description: 'Seed of the jitter (default: a hash of the id).' },
    'lie-rate': { type: 'string', value: 'r', description: 'Tests and benches only: the share of stage calls answered with a wrong output, 0-1, drawn from --seed (default 0).' },
    model: { type: 'string', value: 'dir', description: 'A Hugging Face model directory (config.json, model.safetensors): serve its layers with the reference engine, under the directory\'s name as model id (default: the stand-in digest engine).' },
    'kv-mb': { type: 'string', value: 'MB', description: 'With --model: the KV caches\' bound in MB over every session, idle sessions evicted least-recently-used (default: the KV memory the plan gives it, --memory less the weights of the layers it holds, the embeddings and LM head included on the end stages).' },
    slots: { type: 'string', value: 'n', description: 'Stage calls it runs at once; later ones wait in arrival order (default: no limit).' },
    ...AGENT_TRUST_FLAGS,
    ...UPSTREAM_FLAGS,
    ...OPENAI_ENGINE_FLAGS,
    'pid-file': PID_FILE_FLAG,
  },
};

const SUMMARY = commandSummary('agent');
const DETAILS = `It heartbeats every second, serves POST /v1/stage and POST /v1/sessions/drop (an ended
session: its running calls stopped, its caches freed), keeps each session's caches for the
next steps, and leaves the orchestrator cleanly on SIGTERM or SIGINT. It signs its joins,
heartbeats and leaves with the swarm secret (--token-file, as serve wrote it) and its own key
(--state-file), and refuses stage calls not signed with the secret (docs/security.md).

With --model DIR --openai it runs the model whole behind the OpenAI API (docs/openai.md), an
engine another swarm's agent --upstream fronts; without --join it serves only that.

Example:
  hecate-node agent --id a1 --memory 12 --score 2 --join http://127.0.0.1:8080
  hecate-node agent --id u1 --model /tmp/tiny --openai --port 8000`;

/** The `agent` command. */
export const command: Command = {
  name: 'agent',
  summary: SUMMARY,
  async run(argv, io) {
    const args = parseCommandArgs(argv, spec);
    if (args.values['help'] === true) {
      io.stdout(helpText('agent', SUMMARY, spec, DETAILS));
      return 0;
    }
    const id = requiredFlag(args, 'id');
    if (!/^[A-Za-z0-9._:-]{1,200}$/.test(id)) throw new UsageError(`flag --id: letters, digits, ".", "_", ":" and "-" only, 1-200 of them, got "${id}"`);
    const modelDir = stringFlag(args, 'model');
    const openai = openAIEngineOptions(args, modelDir);
    if (openai !== undefined && modelDir !== undefined && stringFlag(args, 'join') === undefined) return standaloneEngine(args, io, id, modelDir, openai.apiKey);
    requiredFlag(args, 'memory');
    requiredFlag(args, 'score');
    const memoryGb = numberFlag(args, 'memory', 0, 1_000_000) as number;
    const score = numberFlag(args, 'score', 0, 1_000_000) as number;
    const join = requiredFlag(args, 'join');
    const urls = join.split(',').map((u) => u.trim());
    for (const u of urls) if (!/^https?:\/\/[^/\s,]+/.test(u)) throw new UsageError(`flag --join: expected the orchestrator's URL (http://host:port; several separated by commas), got "${u}"`);
    const port = integerFlag(args, 'port', 0, 65535);
    const perLayerMs = numberFlag(args, 'per-layer-ms', 0, 60_000, true);
    const jitter = numberFlag(args, 'jitter', 0, 0.9, true);
    const seed = integerFlag(args, 'seed', 0, 2 ** 32 - 1);
    const lieRate = numberFlag(args, 'lie-rate', 0, 1, true);
    const slots = integerFlag(args, 'slots', 1, 1_000_000);
    const host = stringFlag(args, 'host');
    const kvMb = numberFlag(args, 'kv-mb', 0, 1e9);
    if (kvMb !== undefined && modelDir === undefined) throw new UsageError('flag --kv-mb needs --model DIR');
    const engine = modelDir === undefined ? undefined : await referenceEngine(modelDir, memoryGb, kvMb);
    const whole = engine !== undefined && modelDir !== undefined && openai !== undefined ? await wholeModelOf(engine, modelDir) : undefined;
    const log = (line: string) => io.stderr(`hecate-node agent ${id}: ${line}\n`);
    const upstream = upstreamOptions(args);
    const trust = await agentTrust(args, id, log);
    if (trust.createdKey) log(`created its key pair in ${trust.stateFile} (mode 0600)`);
    return withPidFile(args, async () => {
      const agent = await listening(() => (upstream === undefined ? startAgent : (o: Parameters<typeof startAgent>[0]) => startUpstreamAgent({ ...o, ...upstream }))({
        auth: { secret: trust.secret, key: trust.key },
        ...(trust.tls !== undefined ? { tls: trust.tls } : {}),
        id,
        memoryGb,
        score,
        join: urls,
        ...(port !== undefined ? { port } : {}),
        ...(host !== undefined ? { host } : {}),
        ...(perLayerMs !== undefined ? { perLayerMs } : {}),
        ...(jitter !== undefined ? { jitter } : {}),
        ...(seed !== undefined ? { seed } : {}),
        ...(lieRate !== undefined ? { lieRate } : {}),
        ...(slots !== undefined ? { slots } : {}),
        ...(engine !== undefined ? { engine } : {}),
        ...(whole !== undefined ? { routes: (app) => registerEngineOpenAIRoutes(app, { model: whole, clock: systemClock, ...(openai?.apiKey !== undefined ? { apiKey: openai.apiKey } : {}) }) } : {}),
        log,
      }), port ?? 0, host ?? '127.0.0.1');
      if (whole !== undefined) log(`OpenAI API on ${agent.url}/v1 for model "${whole.id}", run whole`);
      if (engine !== undefined && modelDir !== undefined) log(`reference engine on model "${modelIdOf(modelDir)}" (${modelDir}): loads the layers the orchestrator assigns, reading only their tensors; KV caches bounded to ${kvMb === undefined ? `the KV memory the plan gives it (${memoryGb} GB less the weights of its layers)` : `${kvMb} MB`}`);
      io.stdout(`hecate-node agent ${id}: listening on ${agent.url}, joining ${join}\n`);
      // A join the orchestrator refuses (4xx) ends the agent: retrying would be refused again.
      const refused = agent.joined.then(() => new Promise<never>(() => {}), (error: unknown) => error);
      const outcome = await Promise.race([untilSignal(io), refused]);
      if (typeof outcome !== 'string') {
        await agent.stop();
        throw new UsageError(`${outcome instanceof Error ? outcome.message : String(outcome)}`);
      }
      await agent.stop();
      io.stderr(`hecate-node agent ${id}: ${outcome}: left ${agent.orchestrator()}\n`);
      return 0;
    });
  },
};

/** `agent --model DIR --openai` without --join: the whole model behind the OpenAI API alone, until a signal. */
async function standaloneEngine(args: ParsedArgs, io: Parameters<Command['run']>[1], id: string, dir: string, apiKey: string | undefined): Promise<number> {
  const port = integerFlag(args, 'port', 0, 65535) ?? 0;
  const host = stringFlag(args, 'host') ?? '127.0.0.1';
  const kvMb = numberFlag(args, 'kv-mb', 0, 1e9) ?? 1024; // a whole model alone: its KV bound is --kv-mb (1 GB by default), no plan gives it memory
  const whole = await wholeModelOf(await referenceEngine(dir, 0, kvMb), dir);
  return withPidFile(args, async () => {
    const { startOpenAIEngine } = await import('../agent/openai/openai-engine-server.js');
    const server = await listening(() => startOpenAIEngine({ model: whole, port, host, ...(apiKey !== undefined ? { apiKey } : {}) }), port, host);
    io.stdout(`hecate-node agent ${id}: listening on ${server.url}, OpenAI API for model "${whole.id}" (run whole)\n`);
    const signal = await untilSignal(io);
    await server.stop();
    io.stderr(`hecate-node agent ${id}: ${signal}: stopped\n`);
    return 0;
  });
}
