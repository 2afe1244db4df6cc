/**
 * What the orchestrator checks of a join before it believes it (docs/security.md): the URL it
 * will call is only a scheme, a host and a port, on the joiner's own address (or a host the
 * operator listed); joins of ids it does not know are rate-limited per source network (an IPv4
 * /24, all of loopback, an IPv6 /64: one box cannot spread them over many addresses) and per member
 * credential (the agent key that signed the join); and the membership has a maximum. Known ids are
 * never limited: one host may run many agents.
 */
import { isIP } from 'node:net';
import type { Clock } from '../runtime/types.js';
import { ServeError } from '../wire/serve-error.js';

/** The guard's settings. */
export interface JoinGuardOptions {
  /** Hosts an agent may give in its URL besides its own address (as the orchestrator sees it). */
  readonly agentHosts?: readonly string[];
  /** Members at most (declared, waiting or joined; not those that left). */
  readonly maxNodes: number;
  /** Joins of new ids one source address may make at once. */
  readonly burst: number;
  /** One more new id per this many ms, per source address. */
  readonly refillMs: number;
}

/** The defaults: 30 new ids at once, then one a second, per source address. */
export const JOIN_RATE = Object.freeze({ burst: 30, refillMs: 1000 });

/** An address as compared: lowercase, an IPv4-mapped IPv6 address as its IPv4, no brackets. */
export function normalHost(host: string): string {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare);
  return mapped?.[1] ?? bare;
}

/**
 * The agent's URL as the orchestrator will call it: `scheme://host:port` and nothing else.
 * @param raw the join's `url`
 * @param remote the address the join came from
 * @throws {ServeError} 400 `InvalidRequest` naming `url`: another scheme, credentials, a path, a
 * query or a fragment, or a host that is neither `remote` nor one of `agentHosts`
 */
export function checkJoinUrl(raw: string, remote: string, agentHosts: readonly string[] = []): string {
  const refuse = (why: string) => new ServeError('InvalidRequest', 400, `url: ${why}, got "${raw.slice(0, 200)}"`, { field: 'url' });
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse('not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refuse('the scheme must be http or https');
  if (url.username !== '' || url.password !== '') throw refuse('no user or password may be given');
  // The parser drops an empty query or fragment ("…/?", "…#"): the text is checked too.
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(raw)) throw refuse('no query or fragment may be given');
  if (url.pathname !== '/' || /^[a-z]+:\/\/[^/]+\/./i.test(raw)) throw refuse('no path may be given: scheme, host and port only');
  const from = normalHost(remote);
  // An agent bound to every interface (0.0.0.0, ::) names no address: it is called at the one its join came from.
  const named = normalHost(url.hostname);
  const host = named === '0.0.0.0' || named === '::' ? from : named;
  const allowed = host === from || agentHosts.some((h) => normalHost(h) === host);
  if (!allowed) throw refuse(`the host must be the address the join came from (${from})${agentHosts.length > 0 ? ` or one of --agent-hosts (${agentHosts.join(', ')})` : ' (or be listed in --agent-hosts)'}`);
  const shown = isIP(host) === 6 ? `[${host}]` : host;
  return `${url.protocol}//${shown}${url.port !== '' ? `:${url.port}` : ''}`;
}

/** The network a source address counts in: its IPv4 /24 (all of 127/8 for loopback), its IPv6 /64. */
export function sourceNetwork(source: string): string {
  const host = normalHost(source);
  if (isIP(host) === 4) {
    const octets = host.split('.');
    return octets[0] === '127' ? '127.0.0.0/8' : `${octets.slice(0, 3).join('.')}.0/24`;
  }
  if (isIP(host) !== 6) return host;
  if (host === '::1') return '127.0.0.0/8'; // loopback is one box, whichever family
  const [head = '', tail] = host.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

/** Token buckets for joins of new ids, per source network and per member credential, and the membership's maximum. */
export class JoinGuard {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly options: JoinGuardOptions,
    private readonly clock: Clock,
  ) {}

  /** The maximum of members. */
  get maxNodes(): number {
    return this.options.maxNodes;
  }

  /**
   * Admits a join of an id the orchestrator does not know, from `source`, signed by member
   * credential `credential` (an agent's public key; none on an orchestrator without keys), while
   * there are `members` members. Both buckets must hold a join; then both pay for it.
   * @throws {ServeError} 503 `Full` at the maximum; 429 `RateLimited` past the network's or the credential's rate
   */
  admitNew(id: string, source: string, members: number, credential?: string): void {
    if (members >= this.options.maxNodes) throw new ServeError('Full', 503, `id: the swarm has its maximum of ${this.options.maxNodes} members (--max-nodes); "${id}" cannot join until one leaves or is forgotten`, { field: 'id' });
    const now = this.clock.now();
    const { burst, refillMs } = this.options;
    const keys = bucketKeys(source, credential);
    const buckets = keys.map((key) => {
      const bucket = this.buckets.get(key) ?? { tokens: burst, at: now };
      bucket.tokens = Math.min(burst, bucket.tokens + (now - bucket.at) / refillMs);
      bucket.at = now;
      return bucket;
    });
    const spent = buckets.findIndex((b) => b.tokens < 1);
    if (spent >= 0) {
      keys.forEach((key, i) => this.buckets.set(key, buckets[i] as { tokens: number; at: number }));
      throw this.rateLimited(id, keys[spent] as string, (buckets[spent] as { tokens: number }).tokens);
    }
    keys.forEach((key, i) => {
      (buckets[i] as { tokens: number }).tokens -= 1;
      this.buckets.delete(key); // re-inserted last: the oldest buckets are the first to go
      this.buckets.set(key, buckets[i] as { tokens: number; at: number });
    });
    // The table stays bounded: past 10,000 sources, the least recently refused or admitted go (a fresh bucket is full anyway).
    for (const k of this.buckets.keys()) {
      if (this.buckets.size <= 10_000) break;
      this.buckets.delete(k);
    }
  }

  /**
   * Refuses a join of a new id from a source with no join of a new id left now, reading its
   * bucket and spending nothing: asked before a join's signature is verified, so a flood from
   * one source costs no signature check once its bucket is empty.
   * @throws {ServeError} 429 `RateLimited`, as {@link admitNew} would
   */
  refuseIfExhausted(id: string, source: string, credential?: string): void {
    for (const key of bucketKeys(source, credential)) {
      const bucket = this.buckets.get(key);
      if (bucket === undefined) continue;
      const tokens = Math.min(this.options.burst, bucket.tokens + (this.clock.now() - bucket.at) / this.options.refillMs);
      if (tokens < 1) throw this.rateLimited(id, key, tokens);
    }
  }

  private rateLimited(id: string, key: string, tokens: number): ServeError {
    const { burst, refillMs } = this.options;
    return new ServeError('RateLimited', 429, `id: ${key.startsWith('key ') ? `the agent key ${key.slice(4, 14)}…` : key} joined too many new ids (${burst} at once, then one per ${refillMs} ms); "${id}" may try again in ${Math.ceil((1 - tokens) * refillMs)} ms`, { field: 'id' });
  }
}

/** The buckets a join of a new id pays from: its source's network, and its credential's when it has one. */
function bucketKeys(source: string, credential: string | undefined): string[] {
  return credential === undefined ? [sourceNetwork(source)] : [sourceNetwork(source), `key ${credential}`];
}
