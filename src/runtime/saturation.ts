/**
 * What `swarm.saturation()` answers (docs/admission.md, "Saturation"): plain data, read-only, in
 * step with the open reservations.
 */

/** One copy's saturation. */
export interface CopySaturation {
  readonly pipelineId: string;
  readonly modelId: string;
  /** Every node of the copy alive: only intact copies admit. */
  readonly intact: boolean;
  /** Requests it holds at once: `min over its stages of slots × (copy time ÷ stage time)`; null when no node of it declares `slots`. */
  readonly capacity: number | null;
  /** Open reservations on it. */
  readonly inFlight: number;
  /** How full its fullest node is, 0 to 1 (slots held ÷ slots × `admission.headroom`; a node shared by several copies counts them all). */
  readonly saturation: number;
  /** Whether one more request fits now. */
  readonly room: boolean;
}

/** The swarm's saturation, and each copy's. */
export interface Saturation {
  /** 0 to 1: the least saturated intact copy's figure (1 when no copy is intact); with a `share` below 1, at least the reservations ÷ this swarm's budget. */
  readonly saturation: number;
  /** No intact copy has room, or this swarm's share is used up: `admit` queues (or sheds a priority below 0). */
  readonly saturated: boolean;
  /** Σ capacity of the intact copies; null when one of them is unlimited. */
  readonly capacity: number | null;
  /** The share of that capacity this swarm admits (`admission.share`; a replica's 1/N). */
  readonly share: number;
  /** Open reservations. */
  readonly inFlight: number;
  /** Requests waiting in `admit`'s queue, all bands. */
  readonly queued: number;
  /** Waiting requests per band, highest priority first. */
  readonly bands: readonly { readonly priority: number; readonly queued: number }[];
  readonly copies: readonly CopySaturation[];
}
