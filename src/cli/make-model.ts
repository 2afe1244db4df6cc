/** `hecate-node make-model`: writes a deterministic random-weight Llama model directory (docs/engine-reference.md). */
import { resolve } from 'node:path';
import { modelParameters } from '../model/config.js';
import { makeModel, type MakeModelDtype } from '../model/make-model.js';
import { ModelError } from '../model/model-error.js';
import { helpText, integerFlag, parseCommandArgs, requiredFlag, stringFlag, UsageError, type ArgsSpec } from './args.js';
import type { Command } from './command.js';
import { commandSummary } from './commands.js';

const spec: ArgsSpec = {
  flags: {
    out: { type: 'string', value: 'dir', description: 'The directory to write (created; its model files overwritten).' },
    layers: { type: 'string', value: 'n', description: 'Decoder layers (default 4).' },
    hidden: { type: 'string', value: 'n', description: 'Hidden size (default 64).' },
    heads: { type: 'string', value: 'n', description: 'Attention heads (default 4).' },
    'kv-heads': { type: 'string', value: 'n', description: 'Key/value heads, dividing --heads (default 2).' },
    intermediate: { type: 'string', value: 'n', description: 'MLP intermediate size (default 160).' },
    vocab: { type: 'string', value: 'n', description: 'Vocabulary size, at least the byte tokenizer\'s 259 (default 259).' },
    seed: { type: 'string', value: 'n', description: 'Seed of the weights (default 1): the same seed writes the same bytes.' },
    dtype: { type: 'string', value: 'f32|f16|bf16', description: 'Weight dtype (default f32).' },
    tie: { type: 'boolean', description: 'Tie the LM head to the embeddings (no lm_head.weight).' },
    shards: { type: 'string', value: 'n', description: 'Write the weights in n shards with model.safetensors.index.json (default 1).' },
  },
};

const SUMMARY = commandSummary('make-model');
const DETAILS = `Writes config.json (LlamaForCausalLM), model.safetensors (or shards and an index), a
byte-level tokenizer.json and tokenizer_config.json with a chat template. The weights are scaled so
greedy decoding rarely meets a tie.

Examples:
  hecate-node make-model --out /tmp/tiny
  hecate-node make-model --out /tmp/m100 --layers 12 --hidden 768 --heads 12 --kv-heads 4 --intermediate 2048 --seed 7`;

const DTYPES: readonly MakeModelDtype[] = ['f32', 'f16', 'bf16'];
const MAX = 1 << 20;

/** The `make-model` command. */
export const command: Command = {
  name: 'make-model',
  summary: SUMMARY,
  async run(argv, io) {
    const args = parseCommandArgs(argv, spec);
    if (args.values['help'] === true) {
      io.stdout(helpText('make-model', SUMMARY, spec, DETAILS));
      return 0;
    }
    const out = resolve(io.cwd, requiredFlag(args, 'out'));
    const dtype = stringFlag(args, 'dtype') ?? 'f32';
    if (!(DTYPES as readonly string[]).includes(dtype)) throw new UsageError(`flag --dtype: expected ${DTYPES.join(', ')}, got "${dtype}"`);
    const int = (name: string) => integerFlag(args, name, 1, MAX);
    const options = {
      layers: int('layers'),
      hidden: int('hidden'),
      heads: int('heads'),
      kvHeads: int('kv-heads'),
      intermediate: int('intermediate'),
      vocab: int('vocab'),
      seed: integerFlag(args, 'seed', 0, 2 ** 32 - 1),
      shards: int('shards'),
      dtype: dtype as MakeModelDtype,
      tie: args.values['tie'] === true,
    };
    const defined = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
    try {
      const made = await makeModel(out, defined);
      const c = made.config;
      io.stdout(`wrote ${out}: ${c.num_hidden_layers} layers, hidden ${c.hidden_size}, ${c.num_attention_heads} heads (${c.num_key_value_heads} kv), intermediate ${c.intermediate_size}, vocab ${c.vocab_size}, ${modelParameters(c)} parameters, ${made.weightBytes} bytes of ${c.torch_dtype} weights (${made.files.join(', ')})\n`);
      return 0;
    } catch (error) {
      if (error instanceof ModelError && error.code === 'InvalidOptions') throw new UsageError(error.message.replace(/^make-model: /, ''), { cause: error });
      throw error;
    }
  },
};
