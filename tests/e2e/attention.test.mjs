// End-to-end: the attention view, on synthetic data and on the real heads of
// all-MiniLM-L6-v2, in the release build. Every test fails on any page error or console error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, dragSlider, typeInto, sharedServerAndBrowser } from './harness.mjs';

const shared = sharedServerAndBrowser();

/** Waits until every part of the attention view is in (none in flight) and `charts` have ink. */
async function waitAttention(page, charts, timeout = 120_000) {
  await page.waitForFunction((charts) => {
    const root = document.querySelector('.attention-view');
    if (!root) return false;
    if (root.dataset.attentionStatus === 'error') throw new Error(`attention view error: ${document.querySelector('.attention-view .status')?.textContent}`);
    if (root.dataset.attentionStatus !== 'ready') return false;
    return charts.every((name) => {
      const c = document.querySelector(`canvas[data-chart="${name}"]`);
      if (!c || c.width === 0) return false;
      const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
      let ink = 0;
      for (let i = 0; i < data.length; i += 16) if (data[i] < 245 || data[i + 1] < 245 || data[i + 2] < 245) ink += 1;
      return ink / (data.length / 16) > 0.02;
    });
  }, charts, { timeout, polling: 200 });
}

const CHARTS = ['heatmap-exact', 'heatmap-approx', 'heatmap-diff', 'row-tv', 'output-error',
  'bias-variance', 'entropy', 'spectral-gap', 'singular-values', 'budget', 'kernel-vs-attention'];

/** The per-method table: { method: mean output error }. */
function meanErrors(page) {
  return page.$$eval('.attention-table tr[data-method]', (rows) => Object.fromEntries(
    rows.map((r) => [r.dataset.method, parseFloat(r.querySelector('.mean-error').textContent)])));
}

test('attention view on synthetic data: every method and chart, from a link', async () => {
  const { page, problems, context } = await openPage(shared.browser,
    `${shared.server.url}?view=attention&len=128&features=64&xshape=1&yshape=1&xnorm=1.5&ynorm=1.5`);
  await waitAttention(page, CHARTS);
  const errors = await meanErrors(page);
  assert.deepEqual(Object.keys(errors).sort(), ['elu', 'hcexp-var', 'lln', 'oprf-var', 'prf-pos', 'ra', 'rff', 'taylor']);
  for (const [method, error] of Object.entries(errors)) {
    assert.ok(Number.isFinite(error) && error >= 0, `${method}: ${error}`);
  }
  // The bias-variance table has every method; randomized attention's bias² is small next to
  // Performer's (one is unbiased, the other a ratio).
  const bias = await page.$$eval('.bias-variance tr[data-method]', (rows) => Object.fromEntries(
    rows.map((r) => [r.dataset.method, parseFloat(r.querySelector('.squared-bias').textContent)])));
  assert.equal(Object.keys(bias).length, 8);
  // The notes under the budget chart and the kernel-against-attention chart are read from
  // the numbers: fitted slopes, wins and the rank correlation.
  assert.match(await page.textContent('.trend-note[data-note="budget"]'), /Fitted slope of ln error against ln D/);
  assert.match(await page.textContent('.trend-note[data-note="kernel-vs-attention"]'),
    /Lowest attention error: [a-z-]+ on \d+ of 12 problems\. .*ρ = /);
  assert.equal(await page.$$eval('.kernel-vs-attention-table tr[data-method]', (r) => r.length), 8);
  // The rows drawn while it computed (each method at its size, `data-planned`) are gone.
  assert.equal(await page.$$eval('.kernel-vs-attention-table tr[data-planned]', (r) => r.length), 0);
  assert.equal(await page.$$eval('.attention-view .error', (e) => e.length), 0);
  assert.deepEqual(problems, []);
  await context.close();
});

test('attention view on real heads: the asset is fetched, the head table computed', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url);
  // Asked for by the workers (they read the stored heads themselves): the server's log.
  const served = shared.server.requests.length;
  await page.click('button[data-view="attention"]');
  await page.waitForFunction(() => /view=attention/.test(location.search));
  await page.selectOption('select[name="src"]', 'minilm');
  await page.waitForFunction(() => /src=minilm/.test(location.search));
  await waitAttention(page, CHARTS, 180_000);
  await page.waitForSelector('.heads-table tr.wins', { timeout: 180_000 });
  const requests = shared.server.requests.slice(served);
  assert.ok(requests.some((p) => p.endsWith('/assets/minilm-heads.bin')), `asset fetched: ${requests}`);
  const caption = await page.$eval('.attention-table .caption', (e) => e.textContent);
  assert.match(caption, /L = 32 tokens, d = 32, dv = 32/);
  const wins = await page.$$eval('.heads-table tr.wins td[data-method]', (cells) => cells.map((c) => [c.dataset.method, +c.textContent]));
  assert.equal(wins.length, 6);
  assert.equal(wins[0][1], 0, 'Performer never beats itself');
  const rows = await page.$$eval('.heads-table details tbody tr', (r) => r.length);
  assert.equal(rows, 72);
  const href = await page.$eval('.heads-table a.download', (a) => a.href);
  assert.match(href, /^data:text\/csv/);
  // Another head: the URL follows and the view recomputes.
  await typeInto(page, '#control-layer', '3');
  await page.waitForFunction(() => /layer=3/.test(location.search));
  await waitAttention(page, CHARTS, 120_000);
  assert.equal(await page.$$eval('.attention-view .error', (e) => e.length), 0);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a large attention run asks first; a smaller setting runs without asking', async () => {
  const { page, problems, context } = await openPage(shared.browser,
    `${shared.server.url}?view=attention&len=1024&d=64&features=1024&xshape=1&yshape=1`);
  await page.waitForSelector('.attention-view .confirm-run', { timeout: 60_000 });
  assert.match(await page.textContent('.attention-view .confirm-run'), /multiply-adds/);
  // Nothing was computed while it waits.
  assert.match(await page.textContent('.attention-table tbody'), /computing/);
  await typeInto(page, '#control-len', '64');
  await page.waitForFunction(() => /len=64(&|$)/.test(location.search));
  await waitAttention(page, ['heatmap-exact', 'output-error'], 120_000);
  assert.equal(await page.$$('.attention-view .confirm-run').then((e) => e.length), 0);
  assert.deepEqual(problems, []);
  await context.close();
});


/** Once settled (computed, or asking first): the controls and the address bar agree. */
async function assertSettled(page, label) {
  await page.waitForFunction(() => {
    const root = document.querySelector('.attention-view');
    return root && (root.dataset.attentionStatus === 'ready' || document.querySelector('.attention-view .confirm-run'));
  }, null, { timeout: 180_000, polling: 100 });
  const url = new URL(page.url());
  const controls = await page.$$eval('.controls input[type="text"][id^="control-"]', (inputs) => inputs.map((i) => [i.id.slice(8), i.value]));
  for (const [key, value] of controls) {
    assert.equal(url.searchParams.get(key), value, `${label}: control ${key} shows ${value}, the address bar ${url.searchParams.get(key)}`);
  }
  assert.equal(await page.$$eval('.control.invalid', (c) => c.length), 0, `${label}: a control is marked invalid`);
}

test('dragging every attention slider end to end keeps one consistent state and no page error', async () => {
  const { page, problems, context } = await openPage(shared.browser,
    `${shared.server.url}?view=attention&len=32&d=8&dv=4&features=16&draws=2&ras=1&methods=prf-pos,elu,taylor`);
  await waitAttention(page, ['heatmap-exact']);
  const sliders = await page.$$eval('.controls .control-row input[type="range"]', (ranges) => ranges.map((r) => r.closest('.control-row').querySelector('input[type="text"]').id.slice(8)));
  assert.ok(sliders.includes('len') && sliders.includes('features'), sliders.join());
  for (const key of sliders) {
    await dragSlider(page, key, true);
    await assertSettled(page, `${key} to its end`);
    await dragSlider(page, key, false);
    await assertSettled(page, `${key} back to its start`);
  }
  assert.deepEqual(problems, []);
  await context.close();
});
