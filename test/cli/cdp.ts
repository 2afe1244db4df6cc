/**
 * A headless Chromium driven over the DevTools protocol with the `ws` package: enough to load a
 * page, evaluate an expression, collect console errors and take a screenshot, with no new npm
 * dependency. Test helper only.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';

/** Debian's binary name first; `CHROMIUM` overrides. */
const CANDIDATES = ['chromium', 'chromium-browser', 'google-chrome'];

/** The Chromium binary on PATH, or `undefined`. */
export function findChromium(): string | undefined {
  const override = process.env['CHROMIUM'];
  if (override) return existsSync(override) ? override : undefined;
  for (const name of CANDIDATES) {
    const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
    if (found.status === 0 && found.stdout.trim() !== '') return found.stdout.trim();
  }
  return undefined;
}

interface Pending {
  resolve(value: Record<string, unknown>): void;
  reject(error: Error): void;
}

/** One page of a headless Chromium, attached over CDP. */
export class HeadlessPage {
  /** Console errors, uncaught exceptions and error log entries, as text. */
  readonly errors: string[] = [];
  /** URLs the page requested (after `Network.enable`). */
  readonly requests: string[] = [];
  private seq = 0;
  private readonly pending = new Map<number, Pending>();
  private readonly waiters: { method: string; resolve(params: Record<string, unknown>): void }[] = [];
  private sessionId = '';

  private constructor(
    private readonly proc: ChildProcess,
    private readonly socket: WebSocket,
    private readonly profileDir: string,
  ) {
    socket.on('message', (data) => this.onMessage(JSON.parse(data.toString()) as Record<string, unknown>));
  }

  /** Starts Chromium headless with a fresh profile and opens one blank page. */
  static async launch(binary: string, width = 1280, height = 800): Promise<HeadlessPage> {
    const profileDir = mkdtempSync(join(tmpdir(), 'hecate-chromium-'));
    const proc = spawn(
      binary,
      [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--no-default-browser-check',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--disable-dev-shm-usage',
        '--hide-scrollbars',
        `--user-data-dir=${profileDir}`,
        '--remote-debugging-address=127.0.0.1',
        '--remote-debugging-port=0',
        `--window-size=${width},${height}`,
        'about:blank',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const endpoint = await new Promise<string>((resolve, reject) => {
      let stderr = '';
      const timer = setTimeout(() => reject(new Error(`chromium did not print its DevTools endpoint within 20 s; stderr:\n${stderr}`)), 20_000);
      proc.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        const match = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
        if (match?.[1] !== undefined) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
      proc.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`chromium exited with code ${String(code)} before listening; stderr:\n${stderr}`));
      });
    });
    const socket = new WebSocket(endpoint, { perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    const page = new HeadlessPage(proc, socket, profileDir);
    const { targetId } = (await page.send('Target.createTarget', { url: 'about:blank' }, false)) as { targetId: string };
    const { sessionId } = (await page.send('Target.attachToTarget', { targetId, flatten: true }, false)) as { sessionId: string };
    page.sessionId = sessionId;
    await page.send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false });
    await page.send('Runtime.enable');
    await page.send('Log.enable');
    await page.send('Page.enable');
    return page;
  }

  /** Sends one CDP command (to the page's session unless `toPage` is false). */
  send(method: string, params: Record<string, unknown> = {}, toPage = true): Promise<Record<string, unknown>> {
    const id = ++this.seq;
    const message = { id, method, params, ...(toPage ? { sessionId: this.sessionId } : {}) };
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.socket.send(JSON.stringify(message));
    });
  }

  /** Navigates and resolves once the page's load event fired. */
  async goto(url: string): Promise<void> {
    const loaded = this.next('Page.loadEventFired');
    const result = (await this.send('Page.navigate', { url })) as { errorText?: string };
    if (result.errorText) throw new Error(`navigation to ${url} failed: ${result.errorText}`);
    await loaded;
  }

  /** Evaluates `expression` in the page and returns its value (awaiting a promise). */
  async evaluate<T>(expression: string): Promise<T> {
    const result = (await this.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true })) as {
      result: { value?: T };
      exceptionDetails?: { text?: string; exception?: { description?: string } };
    };
    if (result.exceptionDetails) throw new Error(`evaluate failed: ${result.exceptionDetails.exception?.description ?? result.exceptionDetails.text ?? 'exception'}`);
    return result.result.value as T;
  }

  /** A PNG of the whole page (not only the viewport). */
  async screenshot(): Promise<Buffer> {
    const { width, height } = await this.evaluate<{ width: number; height: number }>(
      '({ width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight })',
    );
    const result = (await this.send('Page.captureScreenshot', {
      format: 'png',
      captureBeyondViewport: true,
      clip: { x: 0, y: 0, width, height, scale: 1 },
    })) as { data: string };
    return Buffer.from(result.data, 'base64');
  }

  /** Closes the browser and removes its profile. */
  async close(): Promise<void> {
    try {
      await Promise.race([this.send('Browser.close', {}, false), new Promise((r) => setTimeout(r, 2_000))]);
    } catch {
      // the browser may already be gone
    }
    this.socket.close();
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      const exited = new Promise((resolve) => this.proc.once('exit', resolve));
      const timer = setTimeout(() => this.proc.kill('SIGKILL'), 3_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(this.profileDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  }

  private next(method: string): Promise<Record<string, unknown>> {
    return new Promise((resolve) => this.waiters.push({ method, resolve }));
  }

  private onMessage(message: Record<string, unknown>): void {
    if (typeof message['id'] === 'number') {
      const pending = this.pending.get(message['id']);
      this.pending.delete(message['id']);
      const error = message['error'] as { message?: string } | undefined;
      if (error) pending?.reject(new Error(`CDP: ${error.message ?? 'error'}`));
      else pending?.resolve((message['result'] ?? {}) as Record<string, unknown>);
      return;
    }
    const method = String(message['method']);
    const params = (message['params'] ?? {}) as Record<string, unknown>;
    this.record(method, params);
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const waiter = this.waiters[i];
      if (waiter?.method === method) {
        this.waiters.splice(i, 1);
        waiter.resolve(params);
      }
    }
  }

  private record(method: string, params: Record<string, unknown>): void {
    if (method === 'Runtime.consoleAPICalled' && (params['type'] === 'error' || params['type'] === 'assert')) {
      const args = (params['args'] as { value?: unknown; description?: string }[] | undefined) ?? [];
      this.errors.push(`console.${String(params['type'])}: ${args.map((a) => String(a.value ?? a.description ?? '')).join(' ')}`);
    } else if (method === 'Runtime.exceptionThrown') {
      const details = params['exceptionDetails'] as { text?: string; exception?: { description?: string } } | undefined;
      this.errors.push(`exception: ${details?.exception?.description ?? details?.text ?? 'unknown'}`);
    } else if (method === 'Network.requestWillBeSent') {
      this.requests.push(String((params['request'] as { url?: string } | undefined)?.url));
    } else if (method === 'Log.entryAdded') {
      const entry = params['entry'] as { level?: string; text?: string; url?: string } | undefined;
      if (entry?.level === 'error') this.errors.push(`log: ${entry.text ?? ''}${entry.url ? ` (${entry.url})` : ''}`);
    }
  }
}
