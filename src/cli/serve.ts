/** `hecate-node serve`: the HTTP orchestrator (docs/serve.md). */
import type { ModelSpec, NodeProfile } from '../core/types.js';
import { SERVE_DETECTOR, startOrchestrator } from '../orchestrator/orchestrator.js';
import type { ClientClasses } from '../orchestrator/client-classes.js';
import { loadClientClasses } from './client-classes-file.js';
import { loadTopology } from '../sim/topology.js';
import { helpText, integerFlag, parseCommandArgs, stringFlag, UsageError, type ArgsSpec } from './args.js';
import type { Command } from './command.js';
import { commandSummary } from './commands.js';
import { readInput } from './io.js';
import { listening, numberFlag, PID_FILE_FLAG, untilSignal, withPidFile } from './process-flags.js';
import { NATS_ACCESS_FLAGS, replicationFlags } from './replication-flags.js';
import { SERVE_TRUST_FLAGS, serveTrust } from './trust-flags.js';
import { EDGE_FLAGS, edgeFlags } from './edge-flags.js';
import { IDEMPOTENCY_FLAGS, idempotencyFlags } from './idempotency-flags.js';
import { DEFAULT_VERIFY_SAMPLE } from '../orchestrator/verify-span.js';
import { readServedModel, type ServedModel } from '../orchestrator/served-model.js';
import type { TextModel } from '../orchestrator/completion-run.js';
import { absentPackage } from './peers.js';
import { REBALANCE_EVERY_MS } from '../rebalance/rebalancer.js';
import { loadChatTemplate, modelChatTemplate, type ChatTemplate } from '../wire/chat-prompt.js';

const spec: ArgsSpec = {
  flags: {
    port: { type: 'string', value: 'n', description: 'Port to listen on (default 8080; 0: any free port).' },
    host: { type: 'string', value: 'addr', description: 'Address to bind (default 127.0.0.1: this machine only).' },
    topology: { type: 'string', value: 'file', description: 'Topology JSON { models, nodes }: the swarm is planned over these nodes, each down until its agent joins.' },
    model: { type: 'string', value: 'dir', description: 'A Hugging Face model directory: serve it (POST /v1/completions) under the directory\'s name, planned from config.json\'s sizes; only config.json and the tokenizer are read here, never the weights (agents run it with --model DIR).' },
    'tokenizer-config': { type: 'string', value: 'file', description: 'A tokenizer_config.json whose chat template renders each conversation of POST /v1/chat/completions for prefix affinity (needs @huggingface/jinja; default with --model: the model\'s own, else the canonical serialization of every message).' },
    'max-history-mb': { type: 'string', value: 'MB', description: 'With --model: each completion\'s bound on the boundary activations kept for replay (default 64); past it a replay recomputes from the token ids.' },
    layers: { type: 'string', value: 'n', description: 'Without --topology: layers of the base model "base" (default 12).' },
    pipelines: { type: 'string', value: 'n', description: 'Copies of every model (default 2, or the topology\'s own).' },
    'stage-timeout-ms': { type: 'string', value: 'ms', description: 'A stage call taking longer fails and the session resumes elsewhere (default 5000).' },
    'suspect-phi': { type: 'string', value: 'phi', description: `phi at which a silent agent is suspect (default ${SERVE_DETECTOR.suspectThreshold}).` },
    'down-phi': { type: 'string', value: 'phi', description: `phi at which a silent agent is down (default ${SERVE_DETECTOR.threshold}).` },
    'acceptable-pause-ms': { type: 'string', value: 'ms', description: `Pause added to the mean heartbeat interval (default ${SERVE_DETECTOR.acceptablePauseMs}).` },
    'min-std-ms': { type: 'string', value: 'ms', description: `Floor of the heartbeat deviation (default ${SERVE_DETECTOR.minStdDevMs}).` },
    'eject-after': { type: 'string', value: 'n', description: 'Eject an agent after this many consecutive failed stage calls (default 5).' },
    'verify-sample': { type: 'string', value: 'r', description: `Share of stage calls run again on another copy, 0-1; an agent the majority outvotes is quarantined (default ${DEFAULT_VERIFY_SAMPLE}; 0: off).` },
    'verify-probation': { type: 'string', value: 'n', description: 'Verify every stage call of an agent (each time it joins) until n of its checks agreed (default 0).' },
    nats: { type: 'string', value: 'url', description: 'Replicate the swarm through this NATS server (JetStream), e.g. nats://127.0.0.1:4222; several orchestrators given the same --nats and --swarm serve one swarm. Needs --swarm and --topology.' },
    swarm: { type: 'string', value: 'name', description: 'The replicated swarm\'s name (letters, digits, "_", "-"). Needs --nats.' },
    ...NATS_ACCESS_FLAGS,
    ...SERVE_TRUST_FLAGS,
    ...EDGE_FLAGS,
    ...IDEMPOTENCY_FLAGS,
    'queue-size': { type: 'string', value: 'n', description: 'Generations that wait for a slot when every copy is full (agents declare slots with --slots); past it 429 with Retry-After (default 1024; 0: refuse at once).' },
    classes: { type: 'string', value: 'file', description: 'Client classes JSON { default, classes: [{ name, priority?, maxInFlight?, deadlineMs?, tokenFile? }] }: a caller\'s class (by its bearer token, else the open class named in x-hecate-class, else the default) sets its admission priority, deadline and limit (docs/serve.md).' },
    rebalance: { type: 'boolean', description: 'Run the automatic rebalancing policy (docs/rebalance.md): every --rebalance-every-ms, moves that raise counted-once throughput by their hysteresis, each span loaded by its agent before it is routed.' },
    'rebalance-every-ms': { type: 'string', value: 'ms', description: 'With --rebalance: its interval (default 60000).' },
    'drain-ms': { type: 'string', value: 'ms', description: 'On SIGTERM or SIGINT: stop admitting (503 Draining, Retry-After), let running generations finish this long, hand back the rest, then exit (default 10000; 0: hand back at once). A second signal stops at once.' },
    'pid-file': PID_FILE_FLAG,
  },
};

const SUMMARY = commandSummary('serve');
const DETAILS = `Endpoints: POST /v1/nodes (join), POST /v1/nodes/:id/heartbeat, POST /v1/nodes/:id/leave,
POST /v1/generate { model, prompt, steps }, with --model DIR POST /v1/completions (OpenAI's:
prompt, max_tokens, temperature, top_p, seed, stop, stream) and POST /v1/chat/completions, GET /v1/status, GET /v1/events (server-sent
events), GET /metrics (Prometheus); the operator's (--operator-token-file, as a bearer): DELETE
/v1/nodes/:id/key (frees an id bound to an agent's key), DELETE /v1/nodes/:id and DELETE
/v1/nodes?pattern=P (remove members). Drains on SIGTERM or SIGINT (--drain-ms), then stops.

Agents sign their joins, heartbeats and leaves with the swarm secret of --token-file (serve
creates it; agents started in the same directory read it) and with their own key; an id stays
bound to the key it first joined with (docs/security.md).

Example:
  hecate-node serve --port 8080
  hecate-node agent --id a1 --memory 12 --score 2 --join http://127.0.0.1:8080

Several orchestrators on one swarm (nats-server -js running; docs/serve.md):
  hecate-node serve --port 8080 --topology lab.json --nats nats://127.0.0.1:4222 --swarm lab
  hecate-node serve --port 8081 --topology lab.json --nats nats://127.0.0.1:4222 --swarm lab
  hecate-node agent --id a1 --memory 6 --score 2 --join http://127.0.0.1:8080,http://127.0.0.1:8081`;

/** The `serve` command. */
export const command: Command = {
  name: 'serve',
  summary: SUMMARY,
  async run(argv, io) {
    const args = parseCommandArgs(argv, spec);
    if (args.values['help'] === true) {
      io.stdout(helpText('serve', SUMMARY, spec, DETAILS));
      return 0;
    }
    const port = integerFlag(args, 'port', 0, 65535) ?? 8080;
    const host = stringFlag(args, 'host') ?? '127.0.0.1';
    const layers = integerFlag(args, 'layers', 1, 10_000) ?? 12;
    const pipelines = integerFlag(args, 'pipelines', 1, 64);
    const stageTimeoutMs = integerFlag(args, 'stage-timeout-ms', 1, 600_000);
    const ejectAfter = integerFlag(args, 'eject-after', 1, 1_000_000);
    const verifySample = numberFlag(args, 'verify-sample', 0, 1, true);
    const verifyProbation = integerFlag(args, 'verify-probation', 0, 1_000_000);
    const suspect = numberFlag(args, 'suspect-phi', 0, 100);
    const down = numberFlag(args, 'down-phi', 0, 100);
    const pause = numberFlag(args, 'acceptable-pause-ms', 0, 600_000, true);
    const minStd = numberFlag(args, 'min-std-ms', 0, 600_000);
    const drainMs = integerFlag(args, 'drain-ms', 0, 3_600_000) ?? 10_000;
    const queueSize = integerFlag(args, 'queue-size', 0, 1_000_000);
    const rebalanceEveryMs = integerFlag(args, 'rebalance-every-ms', 1, 86_400_000);
    if (rebalanceEveryMs !== undefined && args.values['rebalance'] !== true) throw new UsageError('flag --rebalance-every-ms needs --rebalance');
    const rebalance = args.values['rebalance'] === true ? { everyMs: rebalanceEveryMs ?? REBALANCE_EVERY_MS } : undefined;
    const file = stringFlag(args, 'topology');
    const replication = replicationFlags(args);
    const edge = edgeFlags(args);
    const idempotency = idempotencyFlags(args);
    const modelDir = stringFlag(args, 'model');
    const historyMb = numberFlag(args, 'max-history-mb', 0, 1e9, true);
    if (historyMb !== undefined && modelDir === undefined) throw new UsageError('flag --max-history-mb needs --model DIR');
    if (modelDir !== undefined && file !== undefined) throw new UsageError('flag --model: not with --topology (the model directory gives the plan its model)');
    if (replication !== undefined && file === undefined) throw new UsageError('flag --nats needs --topology FILE: every orchestrator of a replicated swarm plans over the same declared nodes');
    let models: readonly ModelSpec[] = [{ id: 'base', kind: 'base', layers, pipelines: pipelines ?? 2 }];
    let nodes: readonly NodeProfile[] | undefined;
    if (file !== undefined) {
      const text = readInput(io, file);
      if (!text.ok) throw text.error;
      const topology = loadTopology(text.value, file, pipelines === undefined ? {} : { pipelines });
      if (!topology.ok) throw topology.error;
      models = topology.value.models;
      nodes = topology.value.nodes;
    }
    const chatTemplate = await chatTemplateOf(stringFlag(args, 'tokenizer-config'), modelDir);
    const classesFile = stringFlag(args, 'classes');
    let classes: ClientClasses | undefined;
    if (classesFile !== undefined) {
      const text = readInput(io, classesFile);
      if (!text.ok) throw text.error;
      const loaded = loadClientClasses(text.value, classesFile);
      if (!loaded.ok) throw loaded.error;
      classes = loaded.value;
    }
    const trust = serveTrust(args, host);
    const log = (line: string) => io.stderr(`hecate-node serve: ${line}\n`);
    let textModels: ReadonlyMap<string, TextModel> | undefined;
    let agentReserveGb: number | undefined;
    if (modelDir !== undefined) {
      const served = await servedModel(modelDir, pipelines ?? 1);
      models = [served.spec];
      textModels = new Map([[served.text.id, served.text]]);
      agentReserveGb = served.endGb;
      log(served.summary);
    }
    if (chatTemplate?.unavailable !== undefined) log(`chats on this model are refused until then: ${chatTemplate.unavailable}`);
    if (trust.created) log(`created the swarm secret ${trust.tokenFile} (mode 0600): agents read it with --token-file`);
    if (trust.operator?.created === true) log(`created the operator token ${trust.operator.file} (mode 0600): the operator's calls need it as a bearer`);
    return withPidFile(args, async () => {
      const orchestrator = await listening(() => reachingNats(replication?.servers, () => startOrchestrator({
        auth: { secret: trust.secret, bindingsFile: trust.bindingsFile, ...(trust.clientToken !== undefined ? { clientToken: trust.clientToken } : {}), ...(trust.operator !== undefined ? { operatorToken: trust.operator.token } : {}) },
        ...(trust.tls !== undefined ? { tls: trust.tls } : {}),
        host,
        port,
        models,
        ...(nodes !== undefined ? { nodes } : {}),
        failureDetector: {
          ...SERVE_DETECTOR,
          ...(suspect !== undefined ? { suspectThreshold: suspect } : {}),
          ...(down !== undefined ? { threshold: down } : {}),
          ...(pause !== undefined ? { acceptablePauseMs: pause } : {}),
          ...(minStd !== undefined ? { minStdDevMs: minStd } : {}),
        },
        ...(ejectAfter !== undefined ? { ejection: { consecutiveFailures: ejectAfter } } : {}),
        ...(stageTimeoutMs !== undefined ? { stageTimeoutMs } : {}),
        ...(verifySample !== undefined ? { verifySample } : {}),
        ...(verifyProbation !== undefined ? { verifyProbation } : {}),
        ...(replication !== undefined ? { replication } : {}),
        ...(classes !== undefined ? { classes } : {}),
        ...(queueSize !== undefined ? { admission: { queueSize } } : {}),
        ...(rebalance !== undefined ? { rebalance } : {}),
        ...edge,
        ...idempotency,
        ...(textModels !== undefined ? { textModels } : {}),
        ...(agentReserveGb !== undefined ? { agentReserveGb } : {}),
        ...(historyMb !== undefined ? { maxHistoryBytes: Math.floor(historyMb * 1024 * 1024) } : {}),
        ...(chatTemplate !== undefined ? { chatTemplate } : {}),
        log,
      })), port, host);
      io.stdout(`hecate-node serve: listening on ${orchestrator.url}\n`);
      const signal = await untilSignal(io);
      log(`${signal}: draining (admits nothing new; running generations have ${drainMs} ms)`);
      const drained = await Promise.race([orchestrator.drain(drainMs), untilSignal(io)]);
      if (typeof drained === 'string') log(`${drained}: stopping without waiting`);
      else log(`drained: ${drained.finished} generations finished, ${drained.handedBack} handed back`);
      await orchestrator.close();
      io.stderr(`hecate-node serve: ${signal}: stopped\n`);
      return 0;
    });
  },
};

/** The model directory of --model, read as the orchestrator reads it (config and tokenizer only). */
async function servedModel(dir: string, pipelines: number): Promise<ServedModel> {
  try {
    return await readServedModel(dir, pipelines);
  } catch (error) {
    if (absentPackage(error) !== undefined) throw error; // the tokenizer library: main names its install line
    throw new UsageError(`flag --model: ${(error as Error).message}`, { cause: error });
  }
}

/** The chat template of --tokenizer-config, else of the --model directory; undefined with neither. */
async function chatTemplateOf(file: string | undefined, modelDir: string | undefined): Promise<ChatTemplate | undefined> {
  try {
    if (file !== undefined) return await loadChatTemplate(file);
    return modelDir === undefined ? undefined : await modelChatTemplate(modelDir);
  } catch (error) {
    throw new UsageError(`flag ${file !== undefined ? '--tokenizer-config' : '--model'}: ${(error as Error).message}`, { cause: error });
  }
}

/** NATS errors of connecting (refused, no JetStream, a timeout) become a UsageError naming --nats. */
async function reachingNats<T>(servers: readonly string[] | undefined, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    const name = (error as { name?: unknown } | null)?.name;
    const code = (error as { code?: unknown }).code;
    if (servers !== undefined && name === 'ReplicationError' && code === 'Refused') throw new UsageError(`flag --nats: ${(error as Error).message} (--nats-user/--nats-pass-file, --nats-token-file, --nats-creds, --nats-nkey, --nats-ca, --nats-cert/--nats-key)`, { cause: error });
    const nats = name === 'ConnectionError' || name === 'JetStreamNotEnabled' || name === 'TimeoutError' || (name === 'ReplicationError' && code === 'Disconnected');
    if (servers === undefined || !nats) throw error;
    throw new UsageError(`flag --nats: cannot use ${servers.join(',')} (${(error as Error).message}); is nats-server running there with JetStream (-js)?`, { cause: error });
  }
}
