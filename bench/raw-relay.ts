/**
 * `node dist-bench/bench/raw-relay.js URL,URL,… HOPS`: the floor bench/openai-upstream.ts measures
 * serve against, in a process of its own: a relay of nothing but bytes (fastify, undici's
 * dispatcher, the answer written as it arrives: no parsing, routing, admission or failover) from
 * the client to the scripted engines, over one hop (front → engine, round robin) or two (front →
 * a relay per engine → engine, as serve → upstream agent → engine). Prints its URL as one JSON
 * line; ends on stdin's close.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { Agent } from 'undici';

const engines = (process.argv[2] ?? '').split(',').filter((u) => u !== '');
const hops = Number(process.argv[3] ?? 2);

/** A relay of `POST /v1/completions` to `target(i)` for its i-th request. */
function relay(target: (i: number) => string): FastifyInstance {
  const app = Fastify({ logger: false });
  const dispatcher = new Agent({ keepAliveTimeout: 30_000 });
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  let count = 0;
  app.post('/v1/completions', (request, reply) => {
    const to = new URL(target(count++));
    const out = reply.raw;
    void reply.hijack();
    dispatcher.dispatch({ origin: to.origin, path: '/v1/completions', method: 'POST', headers: { 'content-type': 'application/json' }, body: request.body as string }, {
      onConnect() {},
      onHeaders(status: number) {
        out.writeHead(status, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        return true;
      },
      onData(chunk: Buffer) {
        out.write(chunk);
        return true;
      },
      onComplete() {
        out.end();
      },
      onError(error: Error) {
        out.destroy(error);
      },
    });
  });
  return app;
}

const listening = async (app: FastifyInstance): Promise<string> => {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
};

const seconds: string[] = [];
if (hops === 2) for (const engine of engines) seconds.push(await listening(relay(() => engine)));
const next = hops === 2 ? seconds : engines;
const front = await listening(relay((i) => next[i % next.length] as string));
process.stdout.write(`${JSON.stringify(front)}\n`);
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
