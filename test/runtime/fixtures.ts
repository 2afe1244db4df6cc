export * from '../../src/index.js';

/** The fields of an XState inspection event the tests read. */
export interface InspectionEventLike {
  readonly type: string;
  readonly actorRef?: { readonly id: string };
  readonly event?: { readonly type: string };
}
