// Shared by the end-to-end tests, the screenshot script and the benchmark: a static server for
// dist/ on a free loopback port, and Debian's Chromium launched headless through playwright-core.
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = fileURLToPath(new URL('.', import.meta.url));
export const distDir = resolve(here, '..', '..', 'dist');

const mimeTypes = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** Serves dist/ on 127.0.0.1 at a free port; resolves to { url, close, requests }. */
export async function serveDist() {
  const requests = [];
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname);
    requests.push(path);
    const relative = normalize(path === '/' ? '/index.html' : path).replace(/^(\.\.[/\\])+/, '');
    try {
      const body = await readFile(join(distDir, relative));
      res.writeHead(200, { 'content-type': mimeTypes[extname(relative)] ?? 'application/octet-stream' });
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

/** Debian's Chromium, headless. */
export function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: chromiumArgs,
  });
}

/** A page that records every page error and console error into `problems`. */
export async function openPage(browser, url, { deviceScaleFactor = 1, width = 1400, height = 1000 } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, deviceScaleFactor });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
  await page.goto(url);
  return { page, problems, context };
}

/** Waits until the app's root says `ready` (or fails on `error`). */
export async function waitReady(page, timeout = 60_000) {
  await page.waitForFunction(() => {
    const status = document.querySelector('.app')?.dataset.status;
    if (status === 'error') throw new Error('app reported data-status="error"');
    return status === 'ready';
  }, null, { timeout, polling: 50 });
}

/** The results table as { estimatorId: { metric: number } }. */
export function readTable(page) {
  return page.$$eval('tr[data-estimator]', (rows) => Object.fromEntries(rows.map((row) => [
    row.dataset.estimator,
    Object.fromEntries([...row.querySelectorAll('[data-metric]')].map((c) => [c.dataset.metric, parseFloat(c.textContent)])),
  ])));
}

/** Drags the slider of control `key` from one end to the other with the mouse. */
export async function dragSlider(page, key, toEnd, steps = 24) {
  const slider = page.locator('.control-row', { has: page.locator(`#control-${key}`) }).locator('input[type="range"]');
  // Sliders low in the sidebar may be below the fold: a pointer cannot drag them there.
  await slider.scrollIntoViewIfNeeded();
  const box = await slider.boundingBox();
  const y = box.y + box.height / 2;
  const [from, to] = toEnd ? [box.x + 1, box.x + box.width - 1] : [box.x + box.width - 1, box.x + 1];
  await page.mouse.move(from, y);
  await page.mouse.down();
  for (let i = 1; i <= steps; i += 1) await page.mouse.move(from + ((to - from) * i) / steps, y);
  await page.mouse.up();
}
