/**
 * The flags of `hecate-node agent --model DIR --openai` (docs/openai.md, "The reference engine as
 * an upstream"): the reference engine runs the model whole and serves the OpenAI API itself,
 * alone (no `--join`) or beside its stage calls.
 */
import { modelIdOf } from '../model/model-id.js';
import { readPrivateText } from '../net/secret-file.js';
import type { StageEngine } from '../agent/stage-engine.js';
import type { WholeModel } from '../agent/openai/whole-model.js';
import { stringFlag, UsageError, type ArgsSpec, type ParsedArgs } from './args.js';
import { absentPackage } from './peers.js';

/** The flags, spread into the agent command's spec. */
export const OPENAI_ENGINE_FLAGS: ArgsSpec['flags'] = {
  openai: { type: 'boolean', description: 'With --model: run the model whole and serve the OpenAI API (GET /v1/models, POST /v1/completions, POST /v1/chat/completions), an engine another swarm\'s agent --upstream fronts; without --join it serves only that (--memory and --score not needed).' },
  'api-key-file': { type: 'string', value: 'file', description: 'With --openai: the API key (mode 0600) every OpenAI request must carry as a bearer token (default: none needed).' },
};

/** The --openai options the flags give; undefined without --openai. */
export function openAIEngineOptions(args: ParsedArgs, modelDir: string | undefined): { apiKey?: string } | undefined {
  const keyFile = stringFlag(args, 'api-key-file');
  if (args.values['openai'] !== true) {
    if (keyFile !== undefined) throw new UsageError('flag --api-key-file needs --openai');
    return undefined;
  }
  if (modelDir === undefined) throw new UsageError('flag --openai needs --model DIR (the model the reference engine runs whole)');
  if (stringFlag(args, 'upstream') !== undefined) throw new UsageError('flag --openai: not with --upstream (an agent either fronts an engine or runs one)');
  if (keyFile === undefined) return {};
  const read = readPrivateText(keyFile);
  if ('unreadable' in read) throw new UsageError(`flag --api-key-file: ${keyFile}: cannot read it (${read.unreadable})`);
  if ('open' in read) throw new UsageError(`flag --api-key-file: ${keyFile}: ${read.open}`);
  return { apiKey: read.text };
}

/** Loads every layer of the model of `dir` in `engine`, with its tokenizer and chat template. */
export async function wholeModelOf(engine: StageEngine, dir: string): Promise<WholeModel> {
  const { loadWholeModel } = await import('../agent/openai/whole-model.js');
  try {
    return await loadWholeModel(engine, modelIdOf(dir), dir);
  } catch (error) {
    if (absentPackage(error) !== undefined) throw error; // the tokenizer library: main names its install line
    throw new UsageError(`flag --model: ${(error as Error).message}`, { cause: error });
  }
}
