/**
 * `hecate-node`'s optional peers: which package a failed import names, which of a command's peers
 * are missing, and the one line that names them with the install line (docs/install.md).
 */
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/commands.js';
import { absentPackage, missingPeers, missingPeersMessage, packageName } from '../../src/cli/peers.js';

const notFound = (name: string, from = '/p/node_modules/hecate-swarm/dist/src/cli/peers.js') =>
  Object.assign(new Error(`Cannot find package '${name}' imported from ${from}`), { code: 'ERR_MODULE_NOT_FOUND' });

describe('absentPackage', () => {
  it('names the package of a missing-package import error, scoped or not', () => {
    expect(absentPackage(notFound('zod'))).toBe('zod');
    expect(absentPackage(notFound('@nats-io/kv'))).toBe('@nats-io/kv');
  });
  it('is undefined for a missing file, another code, or a non-error', () => {
    expect(absentPackage(Object.assign(new Error("Cannot find module '/x/a.js' imported from /x/b.js"), { code: 'ERR_MODULE_NOT_FOUND' }))).toBeUndefined();
    expect(absentPackage(Object.assign(new Error("Cannot find package 'zod'"), { code: 'EACCES' }))).toBeUndefined();
    expect(absentPackage('zod')).toBeUndefined();
    expect(absentPackage(null)).toBeUndefined();
  });
});

describe('missingPeers', () => {
  it('lists the packages that cannot be imported, in order, by name', async () => {
    const present = new Set(['zod']);
    const load = async (name: string) => {
      if (!present.has(name)) throw notFound(name);
    };
    expect(await missingPeers(['fastify', 'prom-client', 'zod'], load)).toEqual(['fastify', 'prom-client']);
    expect(await missingPeers(['@nats-io/kv@3.3'], load)).toEqual(['@nats-io/kv']);
    expect(await missingPeers(['zod'], load)).toEqual([]);
  });
  it('rethrows an error of a package that is there but broken (its own dependency missing)', async () => {
    await expect(missingPeers(['fastify'], async () => { throw notFound('avvio', '/p/node_modules/fastify/fastify.js'); })).rejects.toThrow(/avvio/);
  });
  it('finds every peer of every command in this checkout (the development install has them all)', async () => {
    for (const [command, { peers, flagPeers }] of COMMANDS) expect(await missingPeers([...peers, ...flagPeers.flat()]), command).toEqual([]);
  });
});

describe('missingPeersMessage', () => {
  it('names the missing packages and the install line of everything the command needs', () => {
    expect(missingPeersMessage('serve', ['fastify', 'prom-client', 'undici', 'zod'])).toBe('hecate-node serve needs fastify, prom-client, undici and zod: npm install hecate-swarm xstate fastify prom-client undici zod');
    expect(missingPeersMessage('agent', ['zod'])).toBe('hecate-node agent needs zod: npm install hecate-swarm xstate fastify undici zod');
    expect(missingPeersMessage('chart', ['zod'])).toBe('hecate-node chart needs zod: npm install hecate-swarm xstate zod');
  });
  it('adds a flag\'s whole group: the NATS packages at the version that runs on Node 20, the inspector\'s two', () => {
    expect(missingPeersMessage('serve', ['@nats-io/kv'])).toBe('hecate-node serve needs @nats-io/kv: npm install hecate-swarm xstate fastify prom-client undici zod @nats-io/jetstream@3.3 @nats-io/kv@3.3 @nats-io/transport-node@3.3');
    expect(missingPeersMessage('swarm-sim', ['ws'])).toBe('hecate-node swarm-sim needs ws: npm install hecate-swarm xstate zod ws @statelyai/inspect');
    expect(missingPeersMessage('inspector', ['ws'])).toBe('hecate-node inspector needs ws: npm install hecate-swarm xstate zod ws');
  });
  it('packageName strips a version, keeps a scope', () => {
    expect(packageName('@nats-io/kv@3.3')).toBe('@nats-io/kv');
    expect(packageName('zod')).toBe('zod');
    expect(packageName('zod@4')).toBe('zod');
  });
});
