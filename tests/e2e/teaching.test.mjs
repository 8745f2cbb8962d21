// End-to-end: what a teacher uses in class: presets (each only a URL), copy link, and the
// exports (the data behind the page as CSV and JSON, the charts as PNG).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { cli, openPage, waitReady, browserName, sharedServerAndBrowser } from './harness.mjs';

const shared = sharedServerAndBrowser();

test('a preset is a link: choosing one sets the URL and explains itself, the rest of the page stays', async () => {
  const { page, problems, context } = await openPage(shared.browser, `${shared.server.url}?n=200&datasets=5&pairs=100`);
  await waitReady(page, 90_000);
  assert.equal(await page.$$eval('.preset-explanation', (e) => e.length), 0, 'no preset matches a custom setting');
  await page.click('a[data-preset="few-features"]');
  await page.waitForFunction(() => /(^|[?&])m=16(&|$)/.test(location.search));
  await waitReady(page, 90_000);
  assert.match(await page.textContent('.preset-explanation'), /m = 16 random features/);
  assert.equal(await page.getAttribute('a[data-preset="few-features"]', 'aria-current'), 'true');
  assert.equal(await page.inputValue('#control-m'), '16');
  // Its href is the same link, usable on its own.
  const href = await page.getAttribute('a[data-preset="mean-only-explodes"]', 'href');
  assert.equal(href, '?scale=0.001&xshape=1&yshape=1&xnorm=1.5&ynorm=1.5');
  const second = await openPage(shared.browser, shared.server.url + href);
  await waitReady(second.page, 90_000);
  assert.match(await second.page.textContent('.preset-explanation'), /mean-only A divides/);
  assert.deepEqual(second.problems, []);
  await second.context.close();
  assert.deepEqual(problems, []);
  await context.close();
});

test('exports: CSV and JSON are byte for byte what kernel-lab experiment prints for the same URL; PNG at device resolution', async () => {
  const { page, problems, context } = await openPage(shared.browser, `${shared.server.url}?m=64&n=200&datasets=5&pairs=100&seed=3&est=prf-pos,hcexp-var,hcexp-opt,rff,cplx,oprf-var`, { deviceScaleFactor: 2 });
  await waitReady(page, 90_000);
  const query = new URL(page.url()).search.slice(1);
  // The export is computed again by the page's own workers, task by task with unfused
  // arithmetic (so relaxed SIMD changes no bit), and the bar counts the tasks while it runs.
  await page.evaluate(() => {
    window.exportStatuses = [];
    const bar = document.querySelector('.export-bar');
    new MutationObserver(() => window.exportStatuses.push(bar.querySelector('.export-status')?.textContent ?? ''))
      .observe(bar, { subtree: true, childList: true, characterData: true });
  });
  const pageJson = await exportedText(page, 'button.export-json');
  assert.equal(pageJson, cli(['experiment', '--query', query]), 'the JSON, byte for byte');
  const said = await page.evaluate(() => window.exportStatuses);
  assert.ok(said.some((t) => /computing the export as the command line does: \d+ of \d+ tasks/.test(t)), JSON.stringify(said));
  await page.waitForFunction(() => !document.querySelector('button.export-csv').disabled);
  const pageCsv = await exportedText(page, 'button.export-csv');
  assert.equal(pageCsv, cli(['experiment', '--query', query, '--csv']), 'the CSV, byte for byte');
  assert.equal(await page.textContent('.export-status'), '', 'nothing left to say');
  // PNG: one file per figure, its charts laid out as on screen at device resolution.
  const figure = page.locator('section.figure', { has: page.locator('canvas[data-chart="mse"]') });
  const downloads = [];
  page.on('download', (d) => downloads.push(d));
  await figure.locator('button.export-png').click();
  await page.waitForTimeout(1_000);
  assert.deepEqual(downloads.map((d) => d.suggestedFilename()), ['mse+max-rel-err.png']);
  const png = readFileSync(await downloads[0].path());
  assert.equal(png.toString('latin1', 1, 4), 'PNG');
  const [width, height] = [png.readUInt32BE(16), png.readUInt32BE(20)];
  const span = await figure.evaluate((f) => {
    const rects = [...f.querySelectorAll('canvas[data-chart]')].map((c) => c.getBoundingClientRect());
    return [Math.max(...rects.map((r) => r.right)) - Math.min(...rects.map((r) => r.left)),
      Math.max(...rects.map((r) => r.bottom)) - Math.min(...rects.map((r) => r.top))];
  });
  assert.ok(Math.abs(width - span[0] * 2) <= 1 && Math.abs(height - span[1] * 2) <= 1,
    `PNG ${width}x${height} is the charts' span ${span} × devicePixelRatio 2`);
  assert.deepEqual(problems, []);
  await context.close();
});

test('copy link puts the address on the clipboard', async () => {
  const { page, problems, context } = await openPage(shared.browser, `${shared.server.url}?m=64&n=200&datasets=5&pairs=100&seed=5`);
  // Reading the clipboard back needs a permission only Chromium's driver can grant; Firefox
  // checks that the button answers either way (copied, the browser's refusal explained, or,
  // when the browser leaves the clipboard's promise pending, the page's own limit said).
  const readable = browserName === 'chromium';
  if (readable) await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await waitReady(page, 90_000);
  await page.click('button.copy-link');
  await page.waitForFunction(() => /link copied|refused the clipboard|did not answer the clipboard/.test(document.querySelector('.export-note')?.textContent ?? ''));
  if (readable) {
    assert.match(await page.textContent('.export-note'), /link copied/);
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    assert.equal(copied, page.url());
  }
  // A clipboard that never answers: the page gives up after its 4 s and says so.
  await page.evaluate(() => { navigator.clipboard.writeText = () => new Promise(() => {}); });
  await page.click('button.copy-link');
  await page.waitForFunction(() => /did not answer the clipboard: copy the address bar/.test(document.querySelector('.export-note')?.textContent ?? ''), null, { timeout: 15_000 });
  assert.deepEqual(problems, []);
  await context.close();
});

test('hovering a scatter point shows its pair, SM, estimate, relative error and |z|²', async () => {
  const { page, problems, context } = await openPage(shared.browser, `${shared.server.url}?m=64&n=200&datasets=5&pairs=100`);
  await waitReady(page, 90_000);
  const canvas = page.locator('canvas[data-chart="scatter-hcexp-var"]');
  await canvas.scrollIntoViewIfNeeded();
  const box = await canvas.boundingBox();
  let text = null;
  // The points crowd along the diagonal: sweep it until one is under the pointer.
  for (let t = 0.15; t <= 0.9 && !text; t += 0.025) {
    await page.mouse.move(box.x + box.width * t, box.y + box.height * (1 - t));
    text = await page.$eval('.panel .tooltip', (e) => e.textContent).catch(() => null);
  }
  assert.ok(text, 'a tooltip appeared');
  assert.match(text, /^pair \d+ · SM = [\d.e-]+ · ŜM = −?[\d.e-]+ · relative error [\d.e-]+ · \|z\|² = [\d.e-]+$/);
  await page.mouse.move(box.x - 20, box.y - 20);
  await page.waitForFunction(() => !document.querySelector('.panel .tooltip'));
  assert.deepEqual(problems, []);
  await context.close();
});

test('layouts: at 1280 × 800 and at 800 px wide, both views, nothing scrolls sideways and no chart sticks out', async () => {
  for (const [width, height] of [[1280, 800], [800, 1000]]) {
    for (const query of ['?n=200&datasets=5&pairs=100', '?view=attention&len=64']) {
      const { page, problems, context } = await openPage(shared.browser, shared.server.url + query, { width, height });
      if (query.includes('attention')) {
        await page.waitForSelector('.attention-view[data-attention-status="ready"]', { timeout: 120_000 });
      } else {
        await waitReady(page, 90_000);
      }
      const where = `${width}x${height} ${query}`;
      const layout = await page.evaluate(() => ({
        scrollWidth: document.documentElement.scrollWidth,
        clientWidth: document.documentElement.clientWidth,
        // Every drawn chart lies inside the page's width and inside its figure box.
        outside: [...document.querySelectorAll('canvas')].filter((c) => c.getBoundingClientRect().width > 0).flatMap((c) => {
          const r = c.getBoundingClientRect();
          const box = (c.closest('.figure') ?? document.body).getBoundingClientRect();
          return r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.right > document.documentElement.clientWidth + 0.5
            ? [`${c.dataset.chart ?? c.getAttribute('aria-label')?.slice(0, 40)}: ${r.left.toFixed(0)}–${r.right.toFixed(0)} in ${box.left.toFixed(0)}–${box.right.toFixed(0)}`]
            : [];
        }),
      }));
      assert.ok(layout.scrollWidth <= layout.clientWidth, `${where}: the page is ${layout.scrollWidth} px wide in a ${layout.clientWidth} px window`);
      assert.deepEqual(layout.outside, [], `${where}: charts outside their box`);
      assert.deepEqual(problems, [], where);
      await context.close();
    }
  }
});

/** A number as a chart writes it: `2.46×10⁻⁴`, `10³`, `0.2512`, `1.2345e-3`. */
function chartNumber(text) {
  const digits = { '⁻': '-', '⁰': '0', '¹': '1', '²': '2', '³': '3', '⁴': '4', '⁵': '5', '⁶': '6', '⁷': '7', '⁸': '8', '⁹': '9' };
  const sup = (s) => [...s].map((c) => digits[c] ?? c).join('');
  let m = /^([\d.]+)×10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)$/.exec(text);
  if (m) return Number(m[1]) * 10 ** Number(sup(m[2]));
  m = /^10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)$/.exec(text);
  if (m) return 10 ** Number(sup(m[1]));
  return Number(text);
}

const near = (a, b, relative) => Math.abs(a - b) <= relative * Math.max(Math.abs(a), Math.abs(b));

/**
 * The file the export bar's `button` downloads, as text. The export computes the experiment
 * again in the page's workers, behind whatever they still have queued (the job's last tasks): on a
 * busy two-core CI machine that can take longer than Playwright's default 30 s, so it waits as
 * long as the page's own readiness (90 s), and a failure the bar reports ends the wait with it.
 */
async function exportedText(page, button) {
  // A bar that never says "failed" leaves the wait to the download's, which then names every
  // text the bar showed, whether its button is disabled and what the page logged meanwhile
  // (CI's Firefox ESR run once waited the whole 90 s with no word of why: a failure that later
  // progress wrote over, mended in ExportRun::take_answer).
  const logged = [];
  const onConsole = (message) => { if (message.type() === 'error') logged.push(message.text()); };
  const onError = (error) => logged.push(`page error: ${error.message}`);
  page.on('console', onConsole);
  page.on('pageerror', onError);
  await page.evaluate(() => {
    const bar = document.querySelector('.export-status');
    window.__exportBarTexts = [];
    if (!bar) return;
    new MutationObserver(() => window.__exportBarTexts.push(bar.textContent))
      .observe(bar, { childList: true, subtree: true, characterData: true });
  });
  const failed = page.waitForFunction(
    () => (window.__exportBarTexts ?? []).concat(document.querySelector('.export-status')?.textContent ?? '')
      .some((text) => /export failed/.test(text)),
    null, { timeout: 90_000, polling: 100 },
  ).then(async () => { throw new Error(`the export bar says: ${await page.textContent('.export-status')}; it said: ${JSON.stringify(await page.evaluate(() => window.__exportBarTexts))}`); }, () => new Promise(() => {}));
  failed.catch(() => {});
  const downloaded = page.waitForEvent('download', { timeout: 90_000 }).catch(async (error) => {
    const disabled = await page.isDisabled(button).catch(() => '?');
    const texts = await page.evaluate(() => window.__exportBarTexts).catch(() => '?');
    throw new Error(`${error.message}; the export bar says: "${await page.textContent('.export-status').catch(() => '?')}"; ${button} disabled: ${disabled}; the bar said: ${JSON.stringify(texts)}; the page logged: ${JSON.stringify(logged)}`);
  });
  try {
    const [download] = await Promise.all([Promise.race([downloaded, failed]), page.click(button)]);
    return readFileSync(await download.path(), 'utf8');
  } finally {
    page.off('console', onConsole);
    page.off('pageerror', onError);
  }
}

/** The page's own JSON export (the numbers behind the charts). */
async function exported(page) {
  return JSON.parse(await exportedText(page, 'button.export-json'));
}

/**
 * Moves the mouse over `chart` at a point from its `data-hover-targets` (CSS pixels of the
 * canvas) picked by `pick`, and returns that target and the tooltip's text.
 */
async function hoverTarget(page, chart, pick) {
  const canvas = page.locator(`canvas[data-chart="${chart}"]`);
  await canvas.scrollIntoViewIfNeeded();
  const targets = JSON.parse(await canvas.getAttribute('data-hover-targets'));
  const target = targets.find(pick);
  assert.ok(target, `a hover target on ${chart} among ${JSON.stringify(targets)}`);
  const box = await canvas.boundingBox();
  await page.mouse.move(box.x + target.x, box.y + target.y);
  const tooltip = page.locator(`.panel:has(canvas[data-chart="${chart}"]) .tooltip`);
  await tooltip.waitFor({ timeout: 5000 });
  const text = await tooltip.textContent();
  // The hovered point is ringed (a whole box is not): centred on the target.
  const marker = page.locator(`.panel:has(canvas[data-chart="${chart}"]) .hover-marker`);
  if (target.kind === 'box') {
    assert.equal(await marker.count(), 0, `a whole box is not ringed (${chart})`);
  } else {
    const ring = await marker.boundingBox();
    const [cx, cy] = [ring.x + ring.width / 2 - box.x, ring.y + ring.height / 2 - box.y];
    assert.ok(Math.abs(cx - target.x) < 1.5 && Math.abs(cy - target.y) < 1.5,
      `${chart}: ring at (${cx}, ${cy}) for the point at (${target.x}, ${target.y})`);
  }
  // Inside the viewport.
  const tip = await tooltip.boundingBox();
  const viewport = page.viewportSize();
  assert.ok(tip.x >= 0 && tip.x + tip.width <= viewport.width, `tooltip inside the viewport: ${JSON.stringify(tip)}`);
  return { target, text };
}

test('hovering a box gives the estimator, its median (as the table), quartiles and whiskers; a dataset dot its value', async () => {
  const { page, problems, context } = await openPage(shared.browser, `${shared.server.url}?m=64&n=200&datasets=6&pairs=100&seed=2`);
  await waitReady(page, 90_000);
  const report = await exported(page);
  const labels = Object.fromEntries(report.estimators.map((e) => [e.label, e]));
  const tableText = (id, metric) => page.textContent(`tr[data-estimator="${id}"] [data-metric="${metric}"]`);
  for (const [chart, metric, name, perDataset] of [
    ['mse', 'median-mse', 'MSE', 'per_dataset_mse'],
    ['max-rel-err', 'median-max-rel-err', 'max relative error', 'per_dataset_max_rel_err'],
  ]) {
    for (const label of Object.keys(labels)) {
      const { text } = await hoverTarget(page, chart, (t) => t.kind === 'box' && t.box === label);
      const m = new RegExp(`^(.+): median ${name} (\\S+) · quartiles (\\S+) to (\\S+) · whiskers (\\S+) to (\\S+) · (\\d+) outliers? · 6 of 6 datasets$`).exec(text);
      assert.ok(m, `box tooltip: ${text}`);
      const e = labels[m[1]];
      assert.ok(e, `the box names an estimator: ${m[1]}`);
      assert.equal(m[2], (await tableText(e.id, metric)).trim(), 'the median the table gives');
      const [q1, q3, low, high] = m.slice(3, 7).map(Number);
      const values = e[perDataset];
      const [min, max] = [Math.min(...values), Math.max(...values)];
      assert.ok(low <= q1 && q1 <= Number(m[2]) * 1.0001 && Number(m[2]) <= q3 * 1.0001 && q3 <= high, text);
      // Whiskers end on datasets' values (Tukey: the most extreme within 1.5 IQR).
      for (const w of [low, high]) assert.ok(values.some((v) => near(v, w, 1e-3)), `whisker ${w} is a dataset's value: ${values}`);
      assert.ok(low >= min * 0.999 && high <= max * 1.001);
      // A dataset's dot: its number (as in the CSV export, from 1) and its value.
      const dot = await hoverTarget(page, chart, (t) => t.kind === 'dataset' && t.box === label);
      const d = new RegExp(`^(.+): dataset (\\d+) of 6 · ${name} (\\S+)( \\(outlier\\))?$`).exec(dot.text);
      assert.ok(d, `dataset tooltip: ${dot.text}`);
      assert.equal(d[1], label);
      assert.ok(near(Number(d[3]), values[Number(d[2]) - 1], 1e-3), `${dot.text} against ${values}`);
    }
  }
  // Leaving the chart hides the tooltip.
  await page.mouse.move(1, 1);
  await page.waitForFunction(() => !document.querySelector('.box-grid .tooltip'));
  assert.deepEqual(problems, []);
  await context.close();
});

test('hovering a theory curve gives the series, x and y as the axes write them', async () => {
  const { page, problems, context } = await openPage(shared.browser, `${shared.server.url}?m=64&n=200&datasets=5&pairs=100`);
  await waitReady(page, 90_000);
  const report = await exported(page);
  // Theorem 3.3: the line of the largest relative error observed is the scatter dataset's.
  for (const e of report.estimators.filter((e) => e.id !== 'prf-pos')) {
    const { text } = await hoverTarget(page, 'theorem-3-3', (t) => t.kind === 'point' && t.series === `${e.label}: largest relative error observed`);
    const m = /^(.+): largest relative error observed · p = ([\d.]+) · relative error = (\S+)$/.exec(text);
    assert.ok(m, `theorem tooltip: ${text}`);
    assert.equal(m[1], e.label);
    assert.ok(Number(m[2]) >= 0.5 && Number(m[2]) <= 1);
    assert.ok(near(chartNumber(m[3]), e.scatter_max_rel_err, 5e-3), `${text} against ${e.scatter_max_rel_err}`);
  }
  // MSE against m: a measured point at one of the curve's m, its MSE in the axis' notation.
  const curve = await hoverTarget(page, 'mse-vs-m', (t) => t.kind === 'point' && / measured /.test(t.series));
  const c = /^(.+), measured \(mean of 4 draws of ω\) · m = (\d+) · MSE = (\S+)$/.exec(curve.text);
  assert.ok(c, `curve tooltip: ${curve.text}`);
  assert.ok([16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192].includes(Number(c[2])), curve.text);
  assert.ok(chartNumber(c[3]) > 0 && Number.isFinite(chartNumber(c[3])), curve.text);
  // Lemma 3.2: where an estimator's radius meets the bound.
  const lemma = await hoverTarget(page, 'lemma-3-2', (t) => /the data's radius/.test(t.series));
  assert.match(lemma.text, /^.+: the data's radius, and the bound there · r = [\d.]+ · bound on √MSE\/SM = \S+( \(above the axis\))?$/);
  await page.mouse.move(1, 1);
  await page.waitForFunction(() => !document.querySelector('.theory .tooltip'));
  assert.deepEqual(problems, []);
  await context.close();
});

test('hovering a scatter point rings the same pair on every panel (no redraw, no long task); the probe is marked on every panel', async (t) => {
  const { page, problems, context } = await openPage(shared.browser, `${shared.server.url}?m=64&n=200&datasets=5&pairs=100&probe=7`);
  await waitReady(page, 90_000);
  const panels = 'section.figure .panel:has(canvas[data-chart^="scatter-"])';
  const shown = await page.$$eval(panels, (ps) => ps.filter((p) => p.style.display !== 'none').map((p) => p.querySelector('canvas').dataset.estimator));
  assert.deepEqual(shown.sort(), ['hcexp-mean', 'hcexp-var', 'prf-hyp']);
  // The probed pair (picked by a click or probe= in the URL) is named by every panel.
  assert.deepEqual(await page.$$eval(panels, (ps) => ps.filter((p) => p.style.display !== 'none').map((p) => p.dataset.probePair)), ['7', '7', '7']);
  // The probe's histograms are drawn after the page is ready: let that finish first, so that
  // the long tasks counted below are the hover's own.
  await page.waitForFunction(() => document.querySelector('.probe .caption')?.textContent.includes('pair 7 of the scatter dataset'));
  await new Promise((ok) => setTimeout(ok, 300));
  if (browserName === 'chromium') {
    assert.ok(await page.evaluate(() => PerformanceObserver.supportedEntryTypes.includes('longtask')), 'Chromium reports long tasks');
    await page.evaluate(() => {
      window.__longTasks = [];
      new PerformanceObserver((list) => window.__longTasks.push(...list.getEntries().map((e) => [Math.round(e.startTime), Math.round(e.duration)]))).observe({ type: 'longtask' });
    });
  }
  const canvas = page.locator('canvas[data-chart="scatter-hcexp-var"]');
  await canvas.scrollIntoViewIfNeeded();
  const box = await canvas.boundingBox();
  const mark = () => page.evaluate(() => Math.round(performance.now()));
  const marks = [await mark()];
  let text = null;
  const started = Date.now();
  let moves = 0;
  for (let f = 0.15; f <= 0.9 && !text; f += 0.025) {
    await page.mouse.move(box.x + box.width * f, box.y + box.height * (1 - f));
    moves += 1;
    text = await page.$eval('.panel .tooltip', (e) => e.textContent).catch(() => null);
  }
  marks.push(await mark());
  assert.ok(text, 'a tooltip appeared');
  const pair = /^pair (\d+) /.exec(text)[1];
  t.diagnostic(`${moves} mouse moves over the scatter panel in ${Date.now() - started} ms (driver round trips included)`);
  await page.waitForFunction((p) => [...document.querySelectorAll('.panel:has(canvas[data-chart^="scatter-"])')]
    .filter((e) => e.style.display !== 'none').every((e) => e.dataset.hoveredPair === p), pair);
  // Each shown panel's overlay has the ring, and only the ring: the chart underneath is unchanged.
  const ink = () => page.$$eval(panels, (ps) => ps.filter((p) => p.style.display !== 'none').map((p) => {
    const o = p.querySelector('canvas.highlight-overlay');
    const data = o.getContext('2d').getImageData(0, 0, o.width, o.height).data;
    let n = 0;
    for (let i = 3; i < data.length; i += 4) if (data[i] > 0) n += 1;
    return n;
  }));
  const rings = await ink();
  assert.ok(rings.every((n) => n > 50 && n < 5000), `a ring on every overlay: ${rings}`);
  await page.mouse.move(1, 1);
  await page.waitForFunction(() => [...document.querySelectorAll('.panel:has(canvas[data-chart^="scatter-"])')].every((e) => !('hoveredPair' in e.dataset)));
  marks.push(await mark());
  assert.deepEqual(await ink(), [0, 0, 0], 'the rings go with the pointer');
  if (browserName === 'chromium') {
    const long = await page.evaluate(() => window.__longTasks);
    assert.deepEqual(long, [], `no long task while hovering (${moves} moves in ${Date.now() - started} ms; marks ${marks})`);
  }
  assert.deepEqual(problems, []);
  await context.close();
});

test('tooltips stay inside the viewport at 800 px, without horizontal scrolling', async () => {
  const { page, problems, context } = await openPage(shared.browser, `${shared.server.url}?m=64&n=200&datasets=5&pairs=100`, { width: 800, height: 900 });
  await waitReady(page, 90_000);
  for (const chart of ['mse', 'max-rel-err']) {
    const canvas = page.locator(`canvas[data-chart="${chart}"]`);
    await canvas.scrollIntoViewIfNeeded();
    const targets = JSON.parse(await canvas.getAttribute('data-hover-targets'));
    // The rightmost box: its tooltip opens to the left, clamped into the panel.
    const last = targets.filter((t) => t.kind === 'box').at(-1);
    await hoverTarget(page, chart, (t) => t === last || (t.kind === last.kind && t.box === last.box));
    assert.equal(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), true, 'no horizontal scroll');
  }
  assert.deepEqual(problems, []);
  await context.close();
});
