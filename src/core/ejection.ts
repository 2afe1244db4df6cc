/**
 * Passive ejection (outlier detection) from request outcomes, as Envoy and Petals do it: a node
 * with too many consecutive failures is taken out for a ban that doubles with each repeat (capped),
 * then comes back on probation; never more than a share of the swarm's nodes out at once, so a bad
 * client cannot empty the swarm. Pure helpers; the node actor and the Swarm statechart use them.
 */

/** Settings of passive ejection. */
export interface EjectionOptions {
  /** Consecutive failed outcomes (`release(lease, { ok: false })`) that eject a node. @defaultValue 5 */
  readonly consecutiveFailures?: number;
  /** The first ban, in ms; each repeat doubles it. @defaultValue 15000 */
  readonly banMs?: number;
  /** The longest ban, in ms. @defaultValue 300000 */
  readonly maxBanMs?: number;
  /** The largest share of the swarm's nodes ejected at once, in [0, 1]. @defaultValue 0.5 */
  readonly maxEjectedShare?: number;
}

/** {@link EjectionOptions} with every default filled in. */
export interface ResolvedEjectionOptions {
  readonly consecutiveFailures: number;
  readonly banMs: number;
  readonly maxBanMs: number;
  readonly maxEjectedShare: number;
}

/** The defaults: Envoy's 5 consecutive failures, Petals' 15 s ban doubling, Envoy's 300 s cap, at most half the swarm. */
export const DEFAULT_EJECTION: ResolvedEjectionOptions = Object.freeze({ consecutiveFailures: 5, banMs: 15_000, maxBanMs: 300_000, maxEjectedShare: 0.5 });

/** Fills in the defaults (no validation: see {@link ejectionOptionsIssue}). */
export function resolveEjectionOptions(o: EjectionOptions = {}): ResolvedEjectionOptions {
  return {
    consecutiveFailures: o.consecutiveFailures ?? DEFAULT_EJECTION.consecutiveFailures,
    banMs: o.banMs ?? DEFAULT_EJECTION.banMs,
    maxBanMs: o.maxBanMs ?? Math.max(DEFAULT_EJECTION.maxBanMs, o.banMs ?? 0),
    maxEjectedShare: o.maxEjectedShare ?? DEFAULT_EJECTION.maxEjectedShare,
  };
}

/** The first problem with a set of ejection options, as a message naming the field; undefined when valid. */
export function ejectionOptionsIssue(o: EjectionOptions | undefined): string | undefined {
  if (o === undefined) return undefined;
  if (o === null || typeof o !== 'object') return 'ejection must be an object { consecutiveFailures?, banMs?, maxBanMs?, maxEjectedShare? }';
  if (o.consecutiveFailures !== undefined && !(Number.isInteger(o.consecutiveFailures) && o.consecutiveFailures >= 1)) return `ejection "consecutiveFailures" must be an integer >= 1, got ${String(o.consecutiveFailures)}`;
  for (const name of ['banMs', 'maxBanMs'] as const) {
    const v = o[name];
    if (v !== undefined && !(typeof v === 'number' && Number.isFinite(v) && v > 0)) return `ejection "${name}" must be a finite number > 0, got ${String(v)}`;
  }
  const share = o.maxEjectedShare;
  if (share !== undefined && !(typeof share === 'number' && share >= 0 && share <= 1)) return `ejection "maxEjectedShare" must be a number in [0, 1], got ${String(share)}`;
  const r = resolveEjectionOptions(o);
  if (r.maxBanMs < r.banMs) return `ejection "maxBanMs" (${r.maxBanMs}) must not be below "banMs" (${r.banMs})`;
  return undefined;
}

/** The ban of the `ejections`-th ejection in a row (1 for the first): banMs · 2^(n−1), capped at maxBanMs. */
export function banMs(ejections: number, o: ResolvedEjectionOptions = DEFAULT_EJECTION): number {
  const n = Math.max(Math.floor(ejections), 1);
  return Math.min(o.banMs * 2 ** Math.min(n - 1, 60), o.maxBanMs);
}

/** The ejection count beyond which the ban no longer grows: node actors cap their counter there, keeping their state space finite. */
export function maxBanLevel(o: ResolvedEjectionOptions = DEFAULT_EJECTION): number {
  let n = 1;
  while (banMs(n, o) < o.maxBanMs) n++;
  return n;
}

/** Whether one more node may be ejected: after it, at most `maxEjectedShare` of `members` are out. */
export function ejectionRoom(ejected: number, members: number, o: ResolvedEjectionOptions = DEFAULT_EJECTION): boolean {
  return members > 0 && ejected + 1 <= Math.floor(o.maxEjectedShare * members + 1e-9);
}

/** Whether a node with `failures` consecutive failures should be ejected: at the threshold, or at the first failure on probation. */
export function shouldEject(failures: number, probation: boolean, o: ResolvedEjectionOptions = DEFAULT_EJECTION): boolean {
  return failures >= o.consecutiveFailures || (probation && failures >= 1);
}
