// Shared by the end-to-end tests, the screenshot script and the benchmark: a static server for
// dist/ on a free loopback port, and a headless browser launched through playwright-core:
// Debian's Chromium, or Debian's Firefox ESR with E2E_BROWSER=firefox.
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { before, after } from 'node:test';
import { execFileSync } from 'node:child_process';
import { chromium, firefox } from 'playwright-core';

const here = fileURLToPath(new URL('.', import.meta.url));
export const distDir = resolve(here, '..', '..', 'dist');

/** The content types of the built files (also the course page's server, course.mjs). */
export const mimeTypes = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/**
 * Serves dist/ (or another build's folder, `dir`) on 127.0.0.1 at a free port; resolves to
 * { url, close, requests }.
 */
export async function serveDist(dir = distDir, { isolated = true } = {}) {
  const requests = [];
  // As `trunk serve` does (Trunk.toml): the page cross-origin isolated, so that the model
  // workers share memory; `isolated: false` serves it as a plain static host would.
  const isolation = isolated
    ? { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' }
    : {};
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname);
    requests.push(path);
    const relative = normalize(path === '/' ? '/index.html' : path).replace(/^(\.\.[/\\])+/, '');
    try {
      const body = await readFile(join(dir, relative));
      res.writeHead(200, { 'content-type': mimeTypes[extname(relative)] ?? 'application/octet-stream', ...isolation });
      res.end(body);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    }
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/`,
    requests,
    close: () => new Promise((ok) => server.close(ok)),
  };
}

export const chromiumArgs = [
  '--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--no-first-run', '--disable-quic',
];

/** The browser the tests drive: `chromium` (the default) or `firefox`, from E2E_BROWSER. */
export const browserName = process.env.E2E_BROWSER || 'chromium';
if (!['chromium', 'firefox'].includes(browserName)) {
  throw new Error(`E2E_BROWSER must be chromium or firefox, not ${JSON.stringify(browserName)}`);
}

/**
 * The release build served and a browser launched once for a test file: registers node:test's
 * `before` and `after` and returns `{ server, browser }`, filled in before the first test.
 * `launchOptions` go to `launchBrowser`.
 */
export function sharedServerAndBrowser(launchOptions = {}) {
  const shared = { server: undefined, browser: undefined };
  before(async () => {
    shared.server = await serveDist();
    shared.browser = await launchBrowser(browserName, launchOptions);
  });
  after(async () => {
    await shared.browser?.close();
    await shared.server?.close();
  });
  return shared;
}

/**
 * Preferences that make Firefox a touch-screen device: over WebDriver BiDi, Playwright's
 * `hasTouch` does nothing in Firefox (and BiDi's emulation.setTouchOverride is unknown to
 * Firefox 153), so the whole browser is told: a coarse primary pointer without hover (CSS
 * `(pointer: coarse)` matches), five touch points, the Touch Events API on.
 */
const firefoxTouchPrefs = {
  'ui.primaryPointerCapabilities': 1,
  'ui.allPointerCapabilities': 1,
  'dom.maxtouchpoints.testing.value': 5,
  'dom.w3c_touch_events.enabled': 1,
};

/**
 * Debian's Chromium or Firefox ESR (per E2E_BROWSER unless `name` is given), headless.
 * `touch`: Firefox as a touch-screen device (`firefoxTouchPrefs`); Chromium needs nothing at
 * launch (its contexts take `hasTouch`, see `openPage`).
 */
export function launchBrowser(name = browserName, { touch = false } = {}) {
  if (name === 'firefox') {
    // Stock Firefox speaks WebDriver BiDi, not Playwright's own protocol: `channel` says so.
    return firefox.launch({
      channel: 'moz-firefox',
      executablePath: process.env.FIREFOX ?? '/usr/bin/firefox-esr',
      headless: true,
      ...(touch ? { firefoxUserPrefs: firefoxTouchPrefs } : {}),
    });
  }
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: chromiumArgs,
  });
}

/**
 * A page that records every page error and console error into `problems`.
 *
 * `hasTouch` gives the context a touch screen and `isMobile` a phone's viewport handling (the
 * page's meta viewport, overlay scrollbars): Chromium honours both (`(pointer: coarse)` then
 * matches); over WebDriver BiDi, Firefox ignores both: launch it with `touch` instead
 * (`launchBrowser`); its touch input works either way (`touchDrag`).
 */
export async function openPage(browser, url, { deviceScaleFactor = 1, width = 1400, height = 1000, hasTouch = false, isMobile = false, init } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, deviceScaleFactor, hasTouch, isMobile });
  // `init`: a function run in the page before its own scripts (a recorder of its states, say).
  if (init) await context.addInitScript(init);
  // Firefox reports a blocked script or connection only to its own console: have the page say it.
  await context.addInitScript(() => document.addEventListener('securitypolicyviolation', (e) => {
    console.error(`Content-Security-Policy violation: ${e.effectiveDirective} blocked ${e.blockedURI || 'an inline script'}`);
  }));
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
  await page.goto(url);
  return { page, problems, context };
}

/**
 * Types `text` into the field `selector` as a person would (click, select all, delete, type key
 * by key) and, unless `enter` is false, presses Enter. The page's fields update on `change`:
 * `page.fill()` sends an untrusted `input` event, on which Firefox never fires `change`.
 */
export async function typeInto(page, selector, text, { enter = true } = {}) {
  const field = page.locator(selector);
  await field.click();
  await field.press('Control+A');
  await field.press('Delete');
  await field.pressSequentially(String(text));
  if (enter) await field.press('Enter');
}

/** Waits until the app's root says `ready` (or fails on `error`). */
export async function waitReady(page, timeout = 60_000) {
  await page.waitForFunction(() => {
    const status = document.querySelector('.app')?.dataset.status;
    if (status === 'error') throw new Error('app reported data-status="error"');
    return status === 'ready';
  }, null, { timeout, polling: 50 });
}

/** Waits until the attention view's main part is in (no part in flight); fails at once on its error. */
export async function waitAttentionReady(page, timeout = 120_000) {
  await page.waitForFunction(() => {
    const root = document.querySelector('.attention-view');
    if (root?.dataset.attentionStatus === 'error') throw new Error(`attention view error: ${document.querySelector('.attention-view .status')?.textContent}`);
    return root?.dataset.attentionStatus === 'ready';
  }, null, { timeout, polling: 200 });
}

/** The results table as { estimatorId: { metric: number } }. */
export function readTable(page) {
  return page.$$eval('tr[data-estimator]', (rows) => Object.fromEntries(rows.map((row) => [
    row.dataset.estimator,
    Object.fromEntries([...row.querySelectorAll('[data-metric]')].map((c) => [c.dataset.metric, parseFloat(c.textContent)])),
  ])));
}

/**
 * Drags the slider of control `key` from one end toward the other with the mouse, `steps`
 * moves as fast as the browser takes them, over `reach` of its width (1: to the other end).
 */
export async function dragSlider(page, key, toEnd, steps = 24, reach = 1) {
  const slider = page.locator('.control-row', { has: page.locator(`#control-${key}`) }).locator('input[type="range"]');
  // Sliders low in the sidebar may be below the fold; WebDriver (Firefox) refuses a pointer
  // outside the viewport anyway. Centred, not just "in view": a slider on the viewport's last
  // pixel row counts as visible, and the pointer would then miss it.
  await slider.evaluate((element) => element.scrollIntoView({ block: 'center', inline: 'nearest' }));
  const box = await slider.boundingBox();
  const y = box.y + box.height / 2;
  const [from, end] = toEnd ? [box.x + 1, box.x + box.width - 1] : [box.x + box.width - 1, box.x + 1];
  const to = from + (end - from) * reach;
  await page.mouse.move(from, y);
  await page.mouse.down();
  for (let i = 1; i <= steps; i += 1) await page.mouse.move(from + ((to - from) * i) / steps, y);
  await page.mouse.up();
}

/**
 * Drags the kernel view's slider `key` from its left end over `reach` of its width in `steps`
 * pointer moves (a quick thumb: each move as fast as the browser takes it), then waits for the
 * page to be ready on the last step. Returns, on the page's clock, `stepTimes` (the slider's
 * input events), `frames` (each time a newer request's scatter was drawn:
 * `data-drawn-generation`) and `ready`; and `previews`, how many times the charts came to show
 * a preview (`data-preview`).
 */
export async function timedDrag(page, key, steps = 40, reach = 0.5) {
  await page.evaluate((key) => {
    const app = document.querySelector('.app');
    window.__frames = [];
    window.__steps = [];
    window.__previews = 0;
    new MutationObserver(() => window.__frames.push(performance.now()))
      .observe(app, { attributes: true, attributeFilter: ['data-drawn-generation'] });
    new MutationObserver(() => { if (app.dataset.preview !== undefined) window.__previews += 1; })
      .observe(app, { attributes: true, attributeFilter: ['data-preview'] });
    const range = [...document.querySelectorAll('.control-row')]
      .find((row) => row.querySelector(`#control-${key}`)).querySelector('input[type="range"]');
    range.addEventListener('input', () => window.__steps.push(performance.now()));
  }, key);
  await dragSlider(page, key, true, steps, reach);
  const ready = await page.evaluate(() => new Promise((resolve) => {
    const app = document.querySelector('.app');
    const done = () => app.dataset.status === 'ready' && app.dataset.generation === app.dataset.drawnGeneration;
    if (done()) { resolve(performance.now()); return; }
    const observer = new MutationObserver(() => { if (done()) { observer.disconnect(); resolve(performance.now()); } });
    observer.observe(app, { attributes: true });
  }));
  const { frames, stepTimes, previews } = await page.evaluate(() => ({ frames: window.__frames, stepTimes: window.__steps, previews: window.__previews }));
  return { stepTimes, frames, ready, previews };
}

/**
 * Drags one finger across the page from `from` to `to` ({ x, y } in CSS pixels of the
 * viewport) in `steps` moves, as trusted touch input: the pointer events (pointerType "touch")
 * and touch events a phone sends.
 *
 * Playwright's `page.touchscreen` only taps, and over WebDriver BiDi (Firefox) its tap does
 * nothing (playwright-core 1.64: an empty RawTouchscreenImpl.tap). So: Chromium, the DevTools
 * protocol's `Input.dispatchTouchEvent`; Firefox, WebDriver BiDi's `input.performActions` with
 * a pointer source of type "touch", sent on the page's own BiDi session, which playwright-core
 * exposes only to a client in the same process (`connection.toImpl`, what Playwright's own
 * tests use; the tests launch the browser in-process).
 */
export async function touchDrag(page, from, to, steps = 12) {
  const at = (i) => ({ x: from.x + ((to.x - from.x) * i) / steps, y: from.y + ((to.y - from.y) * i) / steps });
  if (page.context().browser().browserType().name() === 'chromium') {
    const cdp = await page.context().newCDPSession(page);
    try {
      await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [from] });
      for (let i = 1; i <= steps; i += 1) {
        await cdp.send('Input.dispatchTouchEvent', { type: 'touchMove', touchPoints: [at(i)] });
      }
      await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
    } finally {
      await cdp.detach();
    }
    return;
  }
  const session = page._connection?.toImpl?.(page)?.delegate?._session;
  if (typeof session?.send !== 'function' || !session.sessionId) {
    throw new Error('touchDrag: no WebDriver BiDi session behind this page (playwright-core internals changed?)');
  }
  // WebDriver actions take whole CSS pixels of the viewport.
  const move = ({ x, y }, duration) => ({ type: 'pointerMove', x: Math.round(x), y: Math.round(y), duration });
  const actions = [move(from, 0), { type: 'pointerDown', button: 0 }];
  for (let i = 1; i <= steps; i += 1) actions.push(move(at(i), 16));
  actions.push({ type: 'pointerUp', button: 0 });
  await session.send('input.performActions', {
    context: session.sessionId,
    actions: [{ type: 'pointer', id: 'finger', parameters: { pointerType: 'touch' }, actions }],
  });
  await session.send('input.releaseActions', { context: session.sessionId });
}

/**
 * Runs axe-core on the page (`options` go to `axe.run`) and returns its violations as
 * [{ id, impact, help, targets }], `targets` one selector per node.
 *
 * axe-core is injected as a script of the page's own origin (a path Playwright answers with
 * `axe.source`): an inline `addScriptTag({ content })` is refused by the page's
 * Content-Security-Policy, and Firefox over WebDriver BiDi has no `bypassCSP`.
 */
export async function axeViolations(page, options = {}) {
  if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) {
    // Loaded here, not at the top: the screenshot and bench scripts need no axe-core.
    const { source } = createRequire(import.meta.url)('axe-core');
    const url = new URL('/__e2e__/axe.js', page.url()).href;
    await page.route(url, (route) => route.fulfill({ body: source, contentType: 'text/javascript; charset=utf-8' }));
    await page.addScriptTag({ url });
    await page.unroute(url);
  }
  const violations = await page.evaluate((opts) => window.axe.run(document, opts).then((r) => r.violations), options);
  return violations.map((v) => ({
    id: v.id,
    impact: v.impact,
    help: v.help,
    targets: v.nodes.map((n) => n.target.join(' ')),
  }));
}

/** Violations as readable lines, for an assertion message. */
export function formatViolations(violations) {
  return violations.map((v) => `${v.id} (${v.impact}): ${v.help}\n${v.targets.map((t) => `    ${t}`).join('\n')}`).join('\n');
}

/** Types `value` into control `key`, presses Enter, waits for the recomputed page. */
export async function changeAndWait(page, key, value) {
  const selector = `#control-${key}`;
  await page.fill(selector, String(value));
  const generation = Number(await page.getAttribute('.app', 'data-generation'));
  const started = await page.evaluate(() => performance.now());
  await page.press(selector, 'Enter');
  // Waits inside the page on attribute changes (no polling, which would compete with the
  // workers for the CPU) and returns the moment the page became ready.
  const ended = await page.evaluate((g) => new Promise((resolve) => {
    const app = document.querySelector('.app');
    const done = () => Number(app.dataset.generation) > g && app.dataset.status === 'ready';
    if (done()) { resolve(performance.now()); return; }
    const observer = new MutationObserver(() => {
      if (done()) { observer.disconnect(); resolve(performance.now()); }
    });
    observer.observe(app, { attributes: true });
  }), generation);
  return { updateMs: ended - started, computeMs: Number(await page.getAttribute('.app', 'data-compute-ms')) };
}

/**
 * What `kernel-lab` prints for `args`: the binary KERNEL_LAB_BIN names (scripts/test.sh passes
 * the one its native tests built, so nothing is compiled again), else `cargo run`'s.
 */
export function cli(args) {
  const options = { cwd: resolve(here, '..', '..'), encoding: 'utf8', maxBuffer: 64 << 20 };
  const binary = process.env.KERNEL_LAB_BIN;
  return binary
    ? execFileSync(binary, args, options)
    : execFileSync('cargo', ['run', '-q', '--bin', 'kernel-lab', '--', ...args], options);
}

/**
 * Run in the page (`openPage`'s `init`): records into `window.__lengthsLog` each state the
 * length study's section shows, with its time (`performance.now()`): its status, points,
 * units done and total, its progress bar's value, maximum and label (or null), and how many of
 * its charts are visible. Both builds (before and after the study streamed) show the charts'
 * appearance, so `lengths-bench.mjs` reads the first point from it in either.
 */
export function recordLengths() {
  window.__lengthsLog = [];
  const note = () => {
    const section = document.querySelector('.lengths');
    if (!section) return;
    const bar = section.querySelector('progress');
    const entry = {
      status: section.dataset.lengthsStatus,
      points: Number(section.dataset.lengthsPoints ?? 0),
      done: section.dataset.lengthsDone === undefined ? null : Number(section.dataset.lengthsDone),
      total: section.dataset.lengthsTotal === undefined ? null : Number(section.dataset.lengthsTotal),
      bar: bar ? { value: bar.getAttribute('value'), max: bar.getAttribute('max'), label: bar.getAttribute('aria-label') } : null,
      charts: section.querySelectorAll('canvas[data-chart^="lengths-"]:not([hidden])').length,
    };
    const log = window.__lengthsLog;
    const { t: _, ...last } = log.at(-1) ?? {};
    if (JSON.stringify(last) === JSON.stringify(entry)) return;
    log.push({ t: performance.now(), ...entry });
  };
  new MutationObserver(note).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
}
