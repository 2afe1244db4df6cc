/** `serve --checkpoint-every --claim-lease-ms --checkpoint-ttl-ms`: in range, or a UsageError naming the flag. */
import { describe, expect, it } from 'vitest';
import { parseCommandArgs, UsageError } from '../../src/cli/args.js';
import { IDEMPOTENCY_FLAGS, idempotencyFlags } from '../../src/cli/idempotency-flags.js';

const flags = (...argv: string[]) => idempotencyFlags(parseCommandArgs(argv, { flags: IDEMPOTENCY_FLAGS }));

describe('idempotencyFlags', () => {
  it('gives only the options set', () => {
    expect(flags()).toEqual({});
    expect(flags('--checkpoint-every', '4', '--claim-lease-ms', '1000', '--checkpoint-ttl-ms', '2000')).toEqual({ checkpointEvery: 4, claimLeaseMs: 1000, checkpointTtlMs: 2000 });
  });

  it.each([
    [['--checkpoint-every', '0'], /--checkpoint-every/],
    [['--checkpoint-every', '4097'], /--checkpoint-every/],
    [['--claim-lease-ms', '10'], /--claim-lease-ms/],
    [['--checkpoint-ttl-ms', '5999'], /--checkpoint-ttl-ms: must be at least twice the claim lease \(6000 ms\)/],
    [['--claim-lease-ms', '1000', '--checkpoint-ttl-ms', '1999'], /--checkpoint-ttl-ms.*2000 ms/],
  ])('refuses %j naming the flag', (argv, message) => {
    expect(() => flags(...argv)).toThrow(UsageError);
    expect(() => flags(...argv)).toThrow(message);
  });
});
