/**
 * A model directory's weights, single-file (`model.safetensors`) or sharded
 * (`model.safetensors.index.json` naming each tensor's shard): headers read at open, each tensor's
 * bytes only when asked, counted (docs/engine-reference.md).
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { ModelError } from './model-error.js';
import { readSafetensorsHeader, readSafetensorsTensor, type SafetensorsEntry } from './safetensors.js';

/** The tensors of a model directory, read one at a time by offset. */
export interface ModelWeights {
  readonly dir: string;
  /** Every tensor's name, in the order the files list them. */
  names(): readonly string[];
  /** The tensor's header entry, or undefined when no file holds it. */
  entry(name: string): SafetensorsEntry | undefined;
  /**
   * Reads one tensor (only its bytes) widened to f32; checks its shape when `shape` is given.
   * @throws {ModelError} `InvalidTensor` when absent or of another shape.
   */
  read(name: string, shape?: readonly number[]): Promise<Float32Array>;
  /** Bytes of tensor data read so far (what an agent's span cost to load). */
  bytesRead(): number;
}

async function shardMap(indexPath: string): Promise<Map<string, string>> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(indexPath, 'utf8'));
  } catch (error) {
    throw new ModelError('InvalidFile', `${indexPath}: cannot be read as JSON (${(error as Error).message})`, { cause: error });
  }
  const map = (raw as { weight_map?: unknown } | null)?.weight_map;
  if (typeof map !== 'object' || map === null || Array.isArray(map)) throw new ModelError('InvalidFile', `${indexPath}: "weight_map" must be an object of tensor name → shard file`);
  const out = new Map<string, string>();
  for (const [name, file] of Object.entries(map)) {
    if (typeof file !== 'string' || file !== basename(file)) throw new ModelError('InvalidFile', `${indexPath}: "weight_map"."${name}" must be a file name in the directory, got ${JSON.stringify(file)}`);
    out.set(name, file);
  }
  return out;
}

/**
 * Opens the weights of the model directory `dir` (headers only).
 * @throws {ModelError} `InvalidFile` when neither `model.safetensors` nor
 *   `model.safetensors.index.json` is there, or a shard lacks a tensor its index names.
 */
export async function openModelWeights(dir: string): Promise<ModelWeights> {
  const single = join(dir, 'model.safetensors');
  const index = join(dir, 'model.safetensors.index.json');
  const entries = new Map<string, { path: string; entry: SafetensorsEntry }>();
  if (existsSync(index)) {
    const map = await shardMap(index);
    const files = [...new Set(map.values())];
    for (const file of files) {
      const header = await readSafetensorsHeader(join(dir, file));
      for (const [name, entry] of header.tensors) if (map.get(name) === file) entries.set(name, { path: header.path, entry });
    }
    for (const [name, file] of map) if (!entries.has(name)) throw new ModelError('InvalidFile', `${index}: names tensor "${name}" in ${file}, which does not hold it`);
  } else if (existsSync(single)) {
    const header = await readSafetensorsHeader(single);
    for (const [name, entry] of header.tensors) entries.set(name, { path: header.path, entry });
  } else {
    throw new ModelError('InvalidFile', `${dir}: holds neither model.safetensors nor model.safetensors.index.json`);
  }
  let read = 0;
  return {
    dir,
    names: () => [...entries.keys()],
    entry: (name) => entries.get(name)?.entry,
    bytesRead: () => read,
    async read(name, shape) {
      const found = entries.get(name);
      if (found === undefined) throw new ModelError('InvalidTensor', `${dir}: no tensor "${name}" in the model's weights`);
      if (shape !== undefined && (shape.length !== found.entry.shape.length || shape.some((d, i) => d !== found.entry.shape[i]))) {
        throw new ModelError('InvalidTensor', `${dir}: tensor "${name}" has shape ${JSON.stringify(found.entry.shape)}, the config implies ${JSON.stringify(shape)}`);
      }
      const values = await readSafetensorsTensor(found.path, found.entry);
      read += found.entry.end - found.entry.begin;
      return values;
    },
  };
}
