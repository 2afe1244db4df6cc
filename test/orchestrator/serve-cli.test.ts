import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from '../cli/run-cli.js';
import { freePort } from '../replication/nats-server.js';

/** The swarm secret serve creates: in a temp dir, not the repo. */
const token = join(mkdtempSync(join(tmpdir(), 'hecate-serve-cli-')), 'swarm-token');

describe('hecate-node serve / agent flags', () => {
  it.each([
    [['serve', '--port', '70000'], /flag --port: must be <= 65535/],
    [['serve', '--topology', 'no/such.json'], /no\/such\.json: cannot read file: no such file/],
    [['serve', '--suspect-phi', 'x'], /flag --suspect-phi: must be a number/],
    [['agent', '--id', 'a1', '--score', '1', '--join', 'http://127.0.0.1:1'], /missing required flag --memory/],
    [['agent', '--id', 'a1', '--memory', '0', '--score', '1', '--join', 'http://127.0.0.1:1'], /flag --memory: must be a number > 0/],
    [['agent', '--id', 'a 1', '--memory', '4', '--score', '1', '--join', 'http://127.0.0.1:1'], /flag --id: letters, digits/],
    [['agent', '--id', 'a1', '--memory', '4', '--score', '1', '--join', 'localhost:8080'], /flag --join: expected the orchestrator's URL/],
    [['agent', '--id', 'a1', '--memory', '4', '--score', '1', '--join', 'http://127.0.0.1:1,127.0.0.1:2'], /flag --join: expected the orchestrator's URL .*got "127\.0\.0\.1:2"/],
    [['serve', '--nats', 'nats://127.0.0.1:4222'], /flag --nats needs --swarm NAME/],
    [['serve', '--swarm', 'lab'], /flag --swarm needs --nats URL/],
    [['serve', '--tokenizer-config', 'no/such.json'], /flag --tokenizer-config: .*no such file/],
    [['agent', '--id', 'u1', '--openai'], /flag --openai needs --model DIR/],
    [['agent', '--id', 'u1', '--api-key-file', 'key'], /flag --api-key-file needs --openai/],
    [['serve', '--nats', 'http://127.0.0.1:4222', '--swarm', 'lab'], /flag --nats: expected nats:\/\/host\[:port\] .*got "http:\/\/127\.0\.0\.1:4222"/],
    [['serve', '--nats', 'nats://127.0.0.1:4222,nats://h:99999', '--swarm', 'lab'], /flag --nats: port must be 1-65535, got 99999/],
    [['serve', '--nats', 'nats://127.0.0.1:4222', '--swarm', 'my.lab'], /flag --swarm: letters, digits, "_" and "-" only/],
    [['serve', '--nats', 'nats://127.0.0.1:4222', '--swarm', ''], /flag --swarm: letters, digits/],
    [['serve', '--nats', 'nats://127.0.0.1:4222', '--swarm', 'lab'], /flag --nats needs --topology FILE/],
    [['serve', '--nats', 'nats://127.0.0.1:4222', '--swarm', 'lab', '--nats-user', 'u'], /flag --nats-user needs --nats-pass-file FILE/],
    [['serve', '--nats', 'nats://127.0.0.1:4222', '--swarm', 'lab', '--nats-creds', 'a.creds', '--nats-nkey', 'u.nk'], /flags --nats-creds, --nats-nkey: give one way to authenticate to NATS/],
  ])('%j exits 2 with a one-line error naming the flag', async (args, message) => {
    const run = await cli(...args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(message);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('exits 2 naming --port when the port is taken', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const run = await cli('serve', '--port', String(port), '--token-file', token);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`flag --port: 127.0.0.1:${port} is already in use`);
    } finally {
      taken.close();
    }
  });

  it('exits 2 naming --nats when no NATS server answers there', async () => {
    const port = await freePort();
    const run = await cli('serve', '--port', '0', '--topology', 'examples/swarm.json', '--nats', `nats://127.0.0.1:${port}`, '--swarm', 'lab', '--token-file', token);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`flag --nats: cannot use nats://127.0.0.1:${port} (connection refused)`);
  });

  it('lists both commands in the overview and documents their endpoints in --help', async () => {
    const overview = await cli('--help');
    expect(overview.stdout).toMatch(/^\s+serve\s/m);
    expect(overview.stdout).toMatch(/^\s+agent\s/m);
    const serve = await cli('serve', '--help');
    expect(serve.stdout).toContain('POST /v1/generate { model, prompt, steps }');
    expect(serve.stdout).toContain('default 127.0.0.1');
  });
});
