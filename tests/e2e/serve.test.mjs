// End-to-end: the README's first command, `./scripts/serve.sh` (`trunk serve --release`), on a
// free loopback port. The page it serves (with Trunk's injected auto-reload script) must load
// and compute with no console error and no page error. From a fresh clone the command builds
// first, hence the generous timeouts; scripts/test.sh runs it with its release build's settings
// (target/test-release, the same profile overrides and lint wrapper), so Trunk finds everything
// built and wasm-opt's output cached. The server's whole process group is stopped afterwards.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchBrowser, openPage, waitReady } from './harness.mjs';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const FIRST_BUILD = 30 * 60_000;

let browser;
let server;

/** A port that was free a moment ago on 127.0.0.1. */
function freePort() {
  return new Promise((ok, fail) => {
    const probe = createServer();
    probe.on('error', fail);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => ok(port));
    });
  });
}

/**
 * Starts `scripts/serve.sh --port <port> --dist <tmp>` in its own process group (its own dist
 * directory, so the release build in dist/ that the other tests load stays as it is).
 */
async function startServe() {
  const port = await freePort();
  const dist = await mkdtemp(join(tmpdir(), 'skl-serve-'));
  const child = spawn('bash', ['scripts/serve.sh', '--port', String(port), '--dist', dist], {
    cwd: root,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    // Trunk reads NO_COLOR as its --no-color flag, which takes only true or false.
    env: { ...process.env, NO_COLOR: 'true' },
  });
  let log = '';
  const keep = (chunk) => { log = (log + chunk).slice(-20_000); };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise((ok) => child.on('exit', (code, signal) => ok({ code, signal })));
  let running = true;
  exited.then(() => { running = false; });
  const stopSync = () => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } };
  process.on('exit', stopSync);
  return {
    url: `http://127.0.0.1:${port}/`,
    log: () => log,
    get running() { return running; },
    exited,
    /** Stops the whole process group (Trunk and any build it started): TERM, then KILL. */
    async stop() {
      if (running) {
        try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
        const timedOut = await Promise.race([exited.then(() => false), new Promise((ok) => setTimeout(() => ok(true), 10_000))]);
        if (timedOut) stopSync();
        await exited;
      }
      // Any straggler of the group (a hook's cargo, say) goes too.
      stopSync();
      process.off('exit', stopSync);
      await rm(dist, { recursive: true, force: true });
    },
  };
}

/** Polls until the server answers with the app's page, or the command exits. */
async function waitServing(serve, timeout) {
  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    if (!serve.running) throw new Error(`serve.sh exited before serving:\n${serve.log()}`);
    try {
      const response = await fetch(serve.url);
      if (response.ok && /<script/.test(await response.text())) return;
    } catch { /* not listening yet */ }
    await new Promise((ok) => setTimeout(ok, 500));
  }
  throw new Error(`serve.sh did not serve within ${timeout / 1000} s:\n${serve.log()}`);
}

after(async () => {
  await server?.stop();
  await browser?.close();
});

// One server (one build, minutes on two cores), both browsers: the test command runs this file
// once, not once per E2E_BROWSER.
test('the served page (./scripts/serve.sh) computes with no console error and no page error, in Chromium and Firefox ESR', { timeout: FIRST_BUILD + 5 * 60_000 }, async () => {
  server = await startServe();
  await waitServing(server, FIRST_BUILD);
  for (const name of ['chromium', 'firefox']) {
    browser = await launchBrowser(name);
    const { page, problems, context } = await openPage(browser, server.url);
    await waitReady(page, 120_000);
    // Trunk's auto-reload script ran: its websocket to the server is open.
    const html = await page.content();
    assert.match(html, /\.well-known\/trunk\/ws/, `${name}: the served page carries Trunk's auto-reload script`);
    // Give the auto-reload websocket and any late error a moment to show.
    await page.waitForTimeout(1_000);
    assert.deepEqual(problems, [], `${name}: console or page errors on the served page:\n${problems.join('\n')}`);
    await context.close();
    await browser.close();
    browser = undefined;
  }
  await server.stop();
  assert.equal(server.running, false);
});
