/** The flags of `hecate-node serve` for its edges (docs/security.md, docs/serve.md "Limits"). */
import { DEFAULT_FORGET_AFTER_MS } from '../orchestrator/forget-silent.js';
import { DEFAULT_MAX_NODES, type EdgeOptions } from '../orchestrator/join-edge.js';
import { integerFlag, stringFlag, UsageError, type FlagSpec, type ParsedArgs } from './args.js';
import { numberFlag } from './process-flags.js';

/** The flags. */
export const EDGE_FLAGS: Readonly<Record<string, FlagSpec>> = {
  'agent-hosts': { type: 'string', value: 'hosts', description: 'Hosts an agent\'s join URL may name besides the address the join came from, separated by commas (default: none).' },
  'max-nodes': { type: 'string', value: 'n', description: `Members at most: a join of a new id past it is refused (default ${DEFAULT_MAX_NODES}).` },
  'forget-after-ms': { type: 'string', value: 'ms', description: `An agent that joined and sent no heartbeat within this is forgotten (default ${DEFAULT_FORGET_AFTER_MS}).` },
  'per-layer-ms': { type: 'string', value: 'ms', description: 'The agents\' ms for one layer and one token at score 1 (their --per-layer-ms): stage budgets and the deadline check grow with it (default 2).' },
};

/** The edge options the flags give. */
export function edgeFlags(args: ParsedArgs): EdgeOptions {
  const hosts = stringFlag(args, 'agent-hosts');
  const agentHosts = hosts?.split(',').map((h) => h.trim()).filter((h) => h !== '');
  if (agentHosts !== undefined && agentHosts.some((h) => !/^[A-Za-z0-9.:[\]-]{1,253}$/.test(h))) throw new UsageError(`flag --agent-hosts: host names or addresses separated by commas, got "${hosts}"`);
  const maxNodes = integerFlag(args, 'max-nodes', 1, 100_000);
  const forgetAfterMs = integerFlag(args, 'forget-after-ms', 1000, 86_400_000);
  const perLayerMs = numberFlag(args, 'per-layer-ms', 0, 60_000, true);
  return {
    ...(agentHosts !== undefined ? { agentHosts } : {}),
    ...(maxNodes !== undefined ? { maxNodes } : {}),
    ...(forgetAfterMs !== undefined ? { forgetAfterMs } : {}),
    ...(perLayerMs !== undefined ? { perLayerMs } : {}),
  };
}
