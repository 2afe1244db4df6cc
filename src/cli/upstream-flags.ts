/** The flags of `hecate-node agent --upstream` (docs/openai.md): the OpenAI-compatible engine an agent fronts. */
import { readPrivateText } from '../net/secret-file.js';
import { stringFlag, UsageError, type ArgsSpec, type ParsedArgs } from './args.js';

/** The upstream flags, spread into the agent command's spec. */
export const UPSTREAM_FLAGS: ArgsSpec['flags'] = {
  upstream: { type: 'string', value: 'url', description: 'Front an OpenAI-compatible engine (vLLM, SGLang, llama.cpp server, ...) at this URL as one whole copy of its model; --memory must hold every layer (docs/openai.md).' },
  'upstream-key-file': { type: 'string', value: 'file', description: "The engine's API key (mode 0600), sent as a bearer token." },
  'upstream-model': { type: 'string', value: 'id', description: "The engine's model id (default: the first of its GET /v1/models)." },
  'tokenizer-config': { type: 'string', value: 'file', description: "The model's tokenizer_config.json: its chat template continues a chat on any engine (needs @huggingface/jinja)." },
};

/** The upstream options the flags give; undefined without --upstream. */
export function upstreamOptions(args: ParsedArgs): { upstream: string; upstreamKey?: string; upstreamModel?: string; tokenizerConfig?: string } | undefined {
  const upstream = stringFlag(args, 'upstream');
  const keyFile = stringFlag(args, 'upstream-key-file');
  const model = stringFlag(args, 'upstream-model');
  const config = stringFlag(args, 'tokenizer-config');
  if (upstream === undefined) {
    if (keyFile !== undefined || model !== undefined || config !== undefined) throw new UsageError('flags --upstream-key-file, --upstream-model and --tokenizer-config need --upstream');
    return undefined;
  }
  if (!/^https?:\/\/[^/\s]+/.test(upstream)) throw new UsageError(`flag --upstream: expected the engine's URL (http://host:port), got "${upstream}"`);
  let upstreamKey: string | undefined;
  if (keyFile !== undefined) {
    const read = readPrivateText(keyFile);
    if ('unreadable' in read) throw new UsageError(`flag --upstream-key-file: ${keyFile}: cannot read it (${read.unreadable})`);
    if ('open' in read) throw new UsageError(`flag --upstream-key-file: ${keyFile}: ${read.open}`);
    upstreamKey = read.text;
  }
  return { upstream, ...(upstreamKey !== undefined ? { upstreamKey } : {}), ...(model !== undefined ? { upstreamModel: model } : {}), ...(config !== undefined ? { tokenizerConfig: config } : {}) };
}
