export * from '../../src/index.js';

/** The fields of an XState inspection event the tests read. */
export interface InspectionEventLike {
  readonly type: string;
  readonly actorRef?: { readonly id: string };
  readonly event?: { readonly type: string };
}

/** The error `fn` throws; a failure if it returns. */
export function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}
