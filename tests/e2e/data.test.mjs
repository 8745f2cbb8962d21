// End-to-end: the kernel view's data panel ("The data and A", src/ui/data.rs). Its view is
// computed in a worker from the configuration (data-status="ready" on the panel once it is
// drawn); its data controls edit the same configuration as the sidebar's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, waitReady, typeInto, sharedServerAndBrowser } from './harness.mjs';

const shared = sharedServerAndBrowser();

const CHARTS = ['data-components', 'data-norms', 'data-dots', 'data-ax', 'data-ay', 'data-z'];

/**
 * Scrolls to the panel and waits until it is there: it is below the first screen, and its code
 * is fetched when the reader scrolls near it (src/ui/below.rs).
 */
async function showPanel(page) {
  await page.evaluate(() => document.querySelector('.data-panel-placeholder, .data-panel')?.scrollIntoView());
  await page.waitForSelector('.data-panel', { timeout: 30_000 });
}

/** Waits for the panel's view to come back from its worker and be drawn. */
async function waitPanel(page) {
  await showPanel(page);
  await page.waitForSelector('.data-panel[data-status="ready"]', { timeout: 30_000 });
}

/** Fraction of non-white pixels of each of the data panel's canvases, keyed by data-chart. */
function panelInk(page) {
  return page.$$eval('.data-panel canvas[data-chart]', (canvases) => Object.fromEntries(canvases.map((c) => {
    const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
    let ink = 0;
    for (let i = 0; i < data.length; i += 4) if (data[i] < 245 || data[i + 1] < 245 || data[i + 2] < 245) ink += 1;
    return [c.dataset.chart, ink / (data.length / 4)];
  })));
}

/** A digest of the panel's pixels, to tell a redraw. */
function panelPixels(page) {
  return page.$$eval('.data-panel canvas[data-chart]', (canvases) => canvases.map((c) => {
    const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
    let hash = 0;
    for (let i = 0; i < data.length; i += 7) hash = (hash * 31 + data[i]) >>> 0;
    return hash;
  }).join(','));
}

test('the data panel draws its charts, and its xshape control changes the URL and redraws them', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + '?n=200&datasets=5&pairs=100');
  await waitReady(page);
  await waitPanel(page);
  const ink = await panelInk(page);
  for (const chart of CHARTS) {
    assert.ok(ink[chart] > 0.02, `chart ${chart} looks blank (ink ${ink[chart]})`);
  }
  const labels = await page.$$eval('.data-panel canvas[role="img"]', (cs) => cs.map((c) => c.getAttribute('aria-label')));
  assert.equal(labels.length, CHARTS.length);
  assert.match(labels[0], /a per component: identity 1 to 1; mean-only .* to .*; variance-adjusted/);
  assert.equal(await page.$$eval('.data-panel .error', (e) => e.length), 0, 'no chart error');
  // Its formulas' MathML is fetched with its code (view-formulas.txt): every one comes in as
  // MathML, none is left as its LaTeX; and so are "What is computed"'s, each estimator's.
  await page.waitForFunction(() => document.querySelectorAll('.data-panel .formula math').length >= 7
    && !document.querySelector('.data-panel .formula-source'), null, { timeout: 30_000 });
  await page.evaluate(() => document.querySelector('.probe-placeholder, .figure.formulas')?.scrollIntoView());
  await page.waitForFunction(() => document.querySelectorAll('.figure.formulas math').length >= 18
    && !document.querySelector('.figure.formulas .formula-source'), null, { timeout: 30_000 });
  // The panel's control and the sidebar's show the one configuration.
  assert.equal(await page.inputValue('#data-control-xshape'), '0.02');
  assert.equal(await page.inputValue('#control-xshape'), '0.02');
  const before = await panelPixels(page);
  await typeInto(page, '#data-control-xshape', '2');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('xshape') === '2');
  await page.waitForFunction((old) => {
    const hashes = [...document.querySelectorAll('.data-panel canvas[data-chart]')].map((c) => {
      const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
      let hash = 0;
      for (let i = 0; i < data.length; i += 7) hash = (hash * 31 + data[i]) >>> 0;
      return hash;
    }).join(',');
    return hashes !== old;
  }, before, { timeout: 30_000, polling: 100 });
  assert.equal(await page.inputValue('#control-xshape'), '2', 'the sidebar follows');
  await waitReady(page);
  await waitPanel(page);
  const after = await panelInk(page);
  for (const chart of CHARTS) {
    assert.ok(after[chart] > 0.02, `chart ${chart} blank after the change (ink ${after[chart]})`);
  }
  assert.deepEqual(problems, []);
  await context.close();
});

test('the data panel sets each side\'s means apart: yscale changes the keys, same gives them back to scale', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + '?n=200&datasets=5&pairs=100');
  await waitReady(page);
  await showPanel(page);
  const label = () => page.$eval('.data-panel canvas[role="img"]', (c) => c.getAttribute('aria-label'));
  const before = await label();
  assert.equal(await page.inputValue('#data-control-yscale'), 'same');
  await typeInto(page, '#data-control-yscale', '100');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('yscale') === '100');
  await page.waitForFunction((old) => document.querySelector('.data-panel canvas[role="img"]').getAttribute('aria-label') !== old, before, { timeout: 30_000 });
  await waitReady(page);
  // A bad value is refused in place, with what is allowed; the URL keeps the last good one.
  await typeInto(page, '#data-control-yscale', 'wide');
  await page.waitForSelector('.data-panel .control.invalid .control-error:has-text("same (the scale b of scale)")');
  assert.equal(new URL(page.url()).searchParams.get('yscale'), '100');
  await typeInto(page, '#data-control-yscale', 'same');
  await page.waitForFunction(() => !new URL(location.href).searchParams.has('yscale'));
  await page.waitForFunction((old) => document.querySelector('.data-panel canvas[role="img"]').getAttribute('aria-label') === old, before, { timeout: 30_000 });
  assert.deepEqual(problems, []);
  await context.close();
});

test("a DERF member's dense P is drawn as a heat map in the data panel", async () => {
  const { page, problems, context } = await openPage(shared.browser,
    shared.server.url + '?d=8&n=200&datasets=5&pairs=100&est=hcexp-var,derf-dense');
  await waitReady(page);
  await waitPanel(page);
  await page.waitForSelector('.data-panel canvas[data-chart="data-dense-0"]', { timeout: 30_000 });
  const ink = await panelInk(page);
  assert.ok(ink['data-dense-0'] > 0.02, `the heat map looks blank (ink ${ink['data-dense-0']})`);
  // Only the chosen member has one.
  assert.equal(ink['data-dense-1'], undefined);
  assert.match(await page.textContent('.data-panel .dense-p .caption'), /derf-dense: the off-diagonal entries carry \d+ %/);
  assert.equal(await page.$$eval('.data-panel .error', (e) => e.length), 0, 'no chart error');
  assert.deepEqual(problems, []);
  await context.close();
});
