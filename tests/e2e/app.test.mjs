// End-to-end: the release build (dist/) served on loopback, opened in Debian's headless
// Chromium or Firefox ESR (E2E_BROWSER, see harness.mjs). Every test fails on any page error or
// console error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, waitReady, readTable, dragSlider, timedDrag, typeInto, sharedServerAndBrowser, browserName } from './harness.mjs';

const shared = sharedServerAndBrowser();

/** Fraction of non-white pixels of every chart canvas, keyed by data-chart. */
function chartInk(page) {
  return page.$$eval('canvas[data-chart]', (canvases) => Object.fromEntries(canvases.map((c) => {
    const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
    let ink = 0;
    for (let i = 0; i < data.length; i += 4) if (data[i] < 245 || data[i + 1] < 245 || data[i + 2] < 245) ink += 1;
    return [c.dataset.chart, ink / (data.length / 4)];
  })));
}

test('default page: every chart drawn, the paper\'s ordering, only its own files requested', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url);
  const foreign = [];
  page.on('request', (r) => { if (!r.url().startsWith(shared.server.url)) foreign.push(r.url()); });
  await waitReady(page, 90_000);
  const ink = await chartInk(page);
  for (const chart of ['scatter-prf-hyp', 'scatter-hcexp-mean', 'scatter-hcexp-var', 'mse', 'max-rel-err', 'mse-vs-m', 'lemma-3-2', 'theorem-3-3']) {
    assert.ok(ink[chart] > 0.02, `chart ${chart} looks blank (ink ${ink[chart]})`);
  }
  const table = await readTable(page);
  assert.deepEqual(Object.keys(table).sort(), ['hcexp-mean', 'hcexp-var', 'prf-hyp']);
  const mse = (id) => table[id]['median-mse'];
  assert.ok(mse('prf-hyp') > mse('hcexp-mean') && mse('hcexp-mean') > mse('hcexp-var'),
    `median MSE should order PRF > mean-only > variance-adjusted: ${JSON.stringify(table)}`);
  const canvas = await page.$eval('canvas[data-chart="mse"]', (c) => [c.width, c.clientWidth]);
  assert.equal(canvas[0], canvas[1], 'backing store follows CSS size at devicePixelRatio 1');
  assert.deepEqual(foreign, []);
  assert.deepEqual(problems, []);
  await context.close();
});

test('changing m through the UI recomputes the table and updates the URL', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + '?n=200&datasets=5&pairs=100');
  await waitReady(page);
  const before = JSON.stringify(await readTable(page));
  const rowsBefore = JSON.stringify(await page.$$eval('tr[data-estimator]', (rows) => rows.map((r) => r.textContent)));
  await typeInto(page, '#control-m', '64');
  await page.waitForFunction((old) => {
    const rows = [...document.querySelectorAll('tr[data-estimator]')];
    return document.querySelector('.app').dataset.status === 'ready'
      && JSON.stringify(rows.map((r) => r.textContent)) !== old;
  }, rowsBefore, { timeout: 60_000, polling: 50 });
  const after = await readTable(page);
  assert.notEqual(JSON.stringify(after), before);
  assert.match(page.url(), /[?&]m=64(&|$)/);
  assert.match(await page.textContent('.results-table caption'), /m = 64/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a link reproduces a view: ?m=64&seed=3 shows those values in the controls', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + '?m=64&seed=3');
  await waitReady(page);
  assert.equal(await page.inputValue('#control-m'), '64');
  assert.equal(await page.inputValue('#control-seed'), '3');
  // The same link gives the same numbers.
  const first = await readTable(page);
  const again = await openPage(shared.browser, shared.server.url + '?m=64&seed=3');
  await waitReady(again.page);
  assert.deepEqual(await readTable(again.page), first);
  assert.deepEqual([...problems, ...again.problems], []);
  await again.context.close();
  await context.close();
});

test('bad URL values fall back to defaults with a visible notice', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + '?m=abc&d=-3&seed=NaN&bogus=1&n=200&datasets=4&pairs=50');
  await waitReady(page);
  const keys = await page.$$eval('.notice li code', (codes) => codes.map((c) => c.textContent));
  assert.deepEqual(keys.sort(), ['bogus', 'd', 'm', 'seed']);
  assert.match(await page.textContent('.notice'), /m: must be an integer from 1 to 16384 \(got "abc"\); the default 1024 is used/);
  assert.equal(await page.inputValue('#control-m'), '1024');
  assert.equal(await page.inputValue('#control-d'), '50');
  assert.deepEqual(problems, []);
  await context.close();
});

test('invalid typing shows an inline message and keeps the last results', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + '?n=200&datasets=4&pairs=50');
  await waitReady(page);
  const before = await readTable(page);
  await typeInto(page, '#control-m', 'lots');
  await page.waitForSelector('.control.invalid .control-error');
  assert.match(await page.textContent('.control.invalid .control-error'), /m: must be an integer from 1 to 16384/);
  assert.equal(await page.getAttribute('.app', 'data-status'), 'ready');
  assert.deepEqual(await readTable(page), before);
  assert.deepEqual(problems, []);
  await context.close();
});

test('clicking a scatter point probes that pair: histogram drawn, URL follows', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + '?n=100&datasets=3&pairs=50&m=64&trials=500');
  await waitReady(page);
  // Click on the variance-adjusted panel at a drawn point: find a pixel of its blue
  // (0, 114, 178) at the dots' 50 % opacity on white.
  const target = await page.$eval('canvas[data-chart="scatter-hcexp-var"]', (c) => {
    const { data, width, height } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
    const scale = c.width / c.clientWidth;
    for (let y = 0; y < height; y += 1) for (let x = 0; x < width; x += 1) {
      const i = 4 * (y * width + x);
      if (Math.abs(data[i] - 127) < 25 && Math.abs(data[i + 1] - 184) < 25 && Math.abs(data[i + 2] - 216) < 25) return { x: x / scale, y: y / scale };
    }
    return null;
  });
  assert.ok(target, 'no point found on the scatter panel');
  await page.click('canvas[data-chart="scatter-hcexp-var"]', { position: target });
  await page.waitForFunction(() => /[?&]probe=\d+/.test(location.search));
  const index = Number(new URL(page.url()).searchParams.get('probe'));
  assert.equal(await page.inputValue('#control-probe'), String(index));
  await page.waitForFunction((i) => document.querySelector('.probe .caption')?.textContent.includes(`pair ${i} of the scatter dataset`), index);
  const ink = await chartInk(page);
  assert.ok(ink.probe > 0.02, `probe chart looks blank (ink ${ink.probe})`);
  // A typed pair of the wrong shape gives an inline message, not an error.
  await typeInto(page, 'input[name="probe-x"]', '1, 2, 3', { enter: false });
  await typeInto(page, 'input[name="probe-y"]', '1, 2', { enter: false });
  await page.click('.typed-pair button');
  assert.match(await page.textContent('.typed-pair .control-error'), /same dimension/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a panic shows the recovery banner, and reset brings back a working page', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + '?crash=1&m=64');
  await page.waitForSelector('#panic-banner', { timeout: 30_000 });
  assert.match(await page.textContent('#panic-banner'), /internal error/);
  assert.equal(await page.getAttribute('.app', 'data-status'), 'error');
  assert.ok(problems.some((p) => /deliberate panic/.test(p)), `the panic's details reach the console: ${problems}`);
  problems.length = 0;
  await Promise.all([page.waitForNavigation(), page.click('#panic-reset')]);
  await waitReady(page, 90_000);
  assert.equal(await page.$('#panic-banner'), null);
  assert.equal(await page.inputValue('#control-m'), '1024');
  assert.deepEqual(problems, []);
  await context.close();
});

test('the page carries a Content-Security-Policy and runs under it', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + '?n=50&datasets=2&pairs=20&m=32');
  await waitReady(page);
  const policy = await page.getAttribute('meta[http-equiv="Content-Security-Policy"]', 'content');
  assert.match(policy, /default-src 'self'/);
  assert.match(policy, /script-src 'self' 'wasm-unsafe-eval' 'sha256-/);
  assert.doesNotMatch(policy, /script-src[^;]*'unsafe-inline'/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('every estimator at once: one panel each, the leaderboard sorted, the θ chart and the bounds drawn', async () => {
  const every = 'prf-pos,prf-hyp,cexp-mean,cexp-var,hcexp-mean,hcexp-var,hcexp-opt,rff,cplx,hcplx,oprf,oprf-var,derf-dense,hderf-dense,derf-fit,hderf-fit';
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + `?est=${every}&d=16&m=64&n=300&datasets=4&pairs=100&theta=0.7`);
  await waitReady(page, 90_000);
  const ink = await chartInk(page);
  for (const id of every.split(',')) {
    assert.ok(ink[`scatter-${id}`] > 0.02, `scatter panel of ${id} looks blank (ink ${ink[`scatter-${id}`]})`);
  }
  for (const chart of ['mse', 'max-rel-err', 'mse-vs-m', 'mse-vs-theta', 'lemma-3-2', 'theorem-3-3']) {
    assert.ok(ink[chart] > 0.02, `chart ${chart} looks blank (ink ${ink[chart]})`);
  }
  const table = await readTable(page);
  assert.deepEqual(Object.keys(table).sort(), every.split(',').sort());
  const medians = await page.$$eval('tr[data-estimator] [data-metric="median-mse"]', (cells) => cells.map((c) => Number(c.textContent)));
  for (let i = 1; i < medians.length; i += 1) assert.ok(medians[i - 1] <= medians[i], `leaderboard not sorted: ${medians}`);
  assert.match(await page.textContent('tr[data-estimator="oprf"] .fitted'), /α = -/);
  assert.match(await page.textContent('tr[data-estimator="hcexp-opt"] .fitted'), /iterations/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('the coupling control: the old orf=1 link is orthogonal blocks, and choosing simplex recomputes', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + '?orf=1&m=64&n=100&datasets=2&pairs=50');
  await waitReady(page, 90_000);
  assert.equal(await page.inputValue('select[name="coupling"]'), 'orthogonal');
  assert.match(page.url(), /[?&]coupling=orthogonal(&|$)/);
  assert.doesNotMatch(page.url(), /[?&]orf=/);
  assert.match(await page.textContent('.results-table caption'), /orthogonal-block ω/);
  await page.selectOption('select[name="coupling"]', 'simplex');
  await page.waitForFunction(() => /[?&]coupling=simplex(&|$)/.test(location.search));
  await waitReady(page, 90_000);
  assert.match(await page.textContent('.results-table caption'), /simplex-block ω/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('links from before the registry keep their meaning (est=prf,mean,var with hyp)', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + '?est=prf,mean,var&hyp=0&m=64&n=100&datasets=2&pairs=50');
  await waitReady(page, 90_000);
  assert.deepEqual(Object.keys(await readTable(page)).sort(), ['cexp-mean', 'cexp-var', 'prf-pos']);
  assert.match(decodeURIComponent(page.url()), /[?&]est=prf-pos,cexp-mean,cexp-var(&|$)/);
  assert.doesNotMatch(page.url(), /[?&]hyp=/);
  // With only positive estimators, the bounds for hyperbolic features are not drawn.
  assert.equal(await page.$eval('canvas[data-chart="lemma-3-2"]', (c) => c.closest('.theory-row').style.display), 'none');
  assert.deepEqual(await page.$$eval('.notice li', (items) => items.map((i) => i.textContent)), []);
  assert.deepEqual(problems, []);
  await context.close();
});

test('hostile URLs never break the page', async () => {
  const hostile = [
    '?m=1e309&d=Infinity&seed=-0&n=0x10',
    '?est=prf,prf,prf&hyp=yes&omega=sometimes&probe=-1&trials=1',
    `?d=${'9'.repeat(5000)}`,
    '?%E2%82%AC=%FF%FE&m=%00&scale=%20',
    '?m=64&m=65&m=66&xnorm=50&ynorm=50&n=50&datasets=2&pairs=20',
    '?probe=19999&n=50&datasets=2&pairs=20&m=16',
  ];
  for (const query of hostile) {
    const { page, problems, context } = await openPage(shared.browser, shared.server.url + query);
    await waitReady(page, 90_000);
    assert.deepEqual(problems, [], `page errors for ${query}`);
    await context.close();
  }
});

test('the computation runs in Web Workers, and a newer setting supersedes the ones in flight', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url);
  await waitReady(page, 90_000);
  const workers = await page.evaluate(() => navigator.hardwareConcurrency);
  assert.match(await page.textContent('.status'), new RegExp(`by ${Math.min(8, Math.max(1, workers))} workers`));
  // Five values typed in quick succession, without waiting: only the last one must show.
  for (const m of [32, 48, 80, 96, 112]) {
    await typeInto(page, '#control-m', String(m));
  }
  await waitReady(page, 60_000);
  assert.match(await page.url(), /[?&]m=112(&|$)/);
  assert.match(await page.textContent('section.figure:has(canvas[data-chart^="scatter-"]) .caption'), /m = 112\b/);
  assert.match(await page.textContent('table caption'), /m = 112\b/);
  // Going back to m = 32 reuses the stored outputs of that earlier request, if it finished,
  // and in any case gives the same numbers as a fresh page with m = 32.
  await typeInto(page, '#control-m', '32');
  await page.waitForFunction(() => /m=32(&|$)/.test(location.search) && document.querySelector('.app').dataset.status === 'ready');
  const again = await readTable(page);
  const fresh = await openPage(shared.browser, shared.server.url + '?m=32');
  await waitReady(fresh.page, 90_000);
  assert.deepEqual(again, await readTable(fresh.page));
  assert.deepEqual(problems, []);
  assert.deepEqual(fresh.problems, []);
  await fresh.context.close();
  await context.close();
});

test('above the work budget the page asks first, and going back restores the last results', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + '?n=200&datasets=5&pairs=100');
  await waitReady(page);
  const before = await readTable(page);
  // (200 + 5 × 1000) pairs × 16384 features × d 50 × 3 estimators ≈ 1.3e10 multiply-adds:
  // above the budget (1e10), below the hard limit (1.5e10).
  await typeInto(page, '#control-pairs', '1000');
  await waitReady(page, 120_000);
  const shown = await readTable(page);
  assert.notDeepEqual(shown, before);
  await typeInto(page, '#control-m', '16384');
  await page.waitForSelector('.confirm-run', { timeout: 10_000 });
  assert.equal(await page.getAttribute('.app', 'data-status'), 'confirm');
  assert.match(await page.textContent('.confirm-run'), /multiply-adds/);
  await page.click('.keep-previous');
  await waitReady(page, 60_000);
  assert.equal(await page.inputValue('#control-m'), '1024');
  assert.equal(await page.inputValue('#control-pairs'), '1000');
  // The restored results are exactly the ones shown before the prompt.
  assert.deepEqual(await readTable(page), shown);
  assert.ok(Object.keys(before).length === 3);
  assert.deepEqual(problems, []);
  await context.close();
});

/**
 * The page's work formula (ExperimentConfig::work) for the parameters in a URL: the curve's
 * projections at its largest m (every smaller m sums a prefix of them).
 */
function workOf(url) {
  const q = new URL(url).searchParams;
  const num = (k) => Number(q.get(k));
  const curve = 8192;
  const perPair = q.get('est').split(',').reduce((a, id) => a + (id === 'cplx' || id === 'hcplx' ? 2 : 1), 0);
  return ((num('n') + num('datasets') * num('pairs')) * num('m') + Math.min(32, num('n')) * 4 * curve) * num('d') * perPair;
}

/** Once the page has settled: every control, the address bar and the budget prompt name one
 * configuration. */
async function assertConsistent(page, label) {
  await page.waitForFunction(() => ['ready', 'confirm'].includes(document.querySelector('.app').dataset.status), null, { timeout: 120_000, polling: 100 });
  const url = new URL(page.url());
  const controls = await page.$$eval('.controls input[type="text"][id^="control-"]', (inputs) => inputs.map((i) => [i.id.slice(8), i.value]));
  for (const [key, value] of controls) {
    assert.equal(url.searchParams.get(key), value, `${label}: control ${key} shows ${value}, the address bar ${url.searchParams.get(key)}`);
  }
  assert.equal(await page.$$eval('.control.invalid', (c) => c.length), 0, `${label}: a control is marked invalid`);
  if (await page.getAttribute('.app', 'data-status') === 'confirm') {
    const asked = Number((await page.textContent('.confirm-run')).match(/need ([0-9.e+]+) multiply-adds/)[1]);
    const work = workOf(page.url());
    assert.ok(Math.abs(asked / work - 1) < 0.06, `${label}: the prompt asks for ${asked}, the settings need ${work}`);
    assert.ok(work > 1e10 && work <= 1.5e10, `${label}: prompt for ${work}`);
  }
  return url.search;
}

test('dragging every slider end to end, through the budget prompt and the work limit, keeps one consistent state and ends on a fresh page\'s charts', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url);
  await waitReady(page, 90_000);
  const sliders = await page.$$eval('.controls .control-row input[type="range"]', (ranges) => ranges.map((r) => r.closest('.control-row').querySelector('input[type="text"]').id.slice(8)));
  assert.ok(sliders.includes('m') && sliders.includes('d'), sliders.join());
  // The sequence of the bug report first: m to its right end, then d to its right end.
  await dragSlider(page, 'm', true);
  await assertConsistent(page, 'm at its end');
  await dragSlider(page, 'd', true);
  const search = await assertConsistent(page, 'then d at its end');
  const url = new URL(page.url());
  assert.ok(workOf(page.url()) <= 1.5e10, `the work limit holds: ${search}`);
  assert.ok(Number(url.searchParams.get('d')) < 200, 'd stopped at the work limit');
  assert.match(await page.locator('.control', { has: page.locator('#control-d') }).locator('.control-note').textContent(), /past the work limit/);
  // Then every slider, both ways.
  for (const key of sliders) {
    await dragSlider(page, key, true);
    await assertConsistent(page, `${key} to its end`);
    await dragSlider(page, key, false);
    await assertConsistent(page, `${key} back to its start`);
  }
  // Every slider back at its start: the page ends on a whole answer whose table and charts
  // are a fresh page's of the same address, pixel for pixel.
  await waitReady(page, 120_000);
  assert.equal(await page.getAttribute('.app', 'data-preview'), null, 'no preview left on screen');
  const fresh = await openPage(shared.browser, page.url());
  await waitReady(fresh.page, 90_000);
  assert.deepEqual(await readTable(page), await readTable(fresh.page));
  // Each chart the fresh page draws (the dragged page, scrolled, also drew the panels below).
  const charts = (p) => p.$$eval('.results section.figure canvas.chart[aria-label]', (canvases) => canvases
    .filter((c) => c.checkVisibility())
    .map((c) => [c.getAttribute('aria-label'), `${c.width}x${c.height} ${c.toDataURL()}`]));
  const drawn = new Map(await charts(page));
  const expected = await charts(fresh.page);
  assert.ok(expected.length >= 8, `${expected.length} charts on a fresh page`);
  for (const [label, pixels] of expected) {
    assert.ok(drawn.has(label), `the dragged page lacks the chart "${label}"`);
    // Pixel for pixel in Chromium. Firefox draws a fresh page's scatter a few pixels
    // differently from the same chart redrawn (not found why: the label, which names the
    // data's MSE and maximum error, and the table agree).
    if (browserName === 'chromium') {
      assert.ok(drawn.get(label) === pixels, `the chart "${label}" differs from a fresh page's`);
    }
  }
  assert.deepEqual(problems, []);
  assert.deepEqual(fresh.problems, []);
  await fresh.context.close();
  await context.close();
});

test('a slider dragged at a thumb\'s pace: previews follow it, and its last step, computed whole, equals a fresh page', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url);
  await waitReady(page, 90_000);
  // A first recompute: the workers' code warmed up, as a reader's page is after a moment.
  await typeInto(page, '#control-seed', '2');
  await waitReady(page, 60_000);
  // m from 16 to about 2000 in 40 steps as fast as the pointer moves (30-40 ms a step here,
  // faster than a job ends: superseding each step, none was drawn until the thumb rested).
  const { stepTimes, frames, previews } = await timedDrag(page, 'm', 40, 0.5);
  const drawnWhileDragging = frames.filter((f) => f <= stepTimes[stepTimes.length - 1]).length;
  // Each answer that ended was drawn while the thumb moved: previews (a quarter of the pairs
  // and datasets, labelled), the whole answer once the thumb rests.
  assert.ok(drawnWhileDragging >= 3, `${drawnWhileDragging} answers drawn during the drag`);
  assert.ok(previews >= 1, `${previews} previews shown`);
  assert.equal(await page.evaluate(() => document.querySelector('.app').dataset.preview), undefined, 'the page ends on the whole answer');
  assert.doesNotMatch(await page.textContent('.status'), /preview/);
  const m = await page.inputValue('#control-m');
  assert.match(page.url(), new RegExp(`[?&]m=${m}(&|$)`));
  assert.match(await page.textContent('table caption'), new RegExp(`m = ${m}\\b`));
  const fresh = await openPage(shared.browser, page.url());
  await waitReady(fresh.page, 90_000);
  assert.deepEqual(await readTable(page), await readTable(fresh.page));
  assert.deepEqual(problems, []);
  assert.deepEqual(fresh.problems, []);
  await fresh.context.close();
  await context.close();
});

test('a long run shows progress and can be cancelled; the previous results stay', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + '?n=200&datasets=5&pairs=100');
  await waitReady(page);
  const table = await readTable(page);
  const generation = await page.getAttribute('.app', 'data-generation');
  await typeInto(page, '#control-pairs', '1000');
  await waitReady(page, 120_000);
  const afterPairs = await readTable(page);
  const readyGeneration = await page.getAttribute('.app', 'data-generation');
  assert.notEqual(readyGeneration, generation);
  await typeInto(page, '#control-m', '16384');
  // The run takes well under a second on two cores (the work limit caps it), less than a
  // driver's round trip in Firefox: the page itself presses Cancel as soon as it is shown.
  const cancelled = page.evaluate(() => new Promise((resolve, reject) => {
    const started = performance.now();
    const poll = () => {
      const button = document.querySelector('button.cancel');
      if (button && document.querySelector('progress.progress')) {
        button.click();
        resolve();
      } else if (performance.now() - started > 10_000) {
        reject(new Error('no Cancel button within 10 s'));
      } else {
        requestAnimationFrame(poll);
      }
    };
    poll();
  }));
  await page.click('.run-anyway');
  await cancelled;
  await page.waitForFunction(() => document.querySelector('.app').dataset.status === 'cancelled');
  assert.match(await page.textContent('.status'), /cancelled/);
  // Nothing from the cancelled run arrives later.
  await page.waitForTimeout(500);
  assert.equal(await page.getAttribute('.app', 'data-status'), 'cancelled');
  assert.equal(await page.getAttribute('.app', 'data-generation'), readyGeneration);
  assert.deepEqual(await readTable(page), afterPairs);
  // And the page still works.
  await typeInto(page, '#control-m', '64');
  await waitReady(page, 60_000);
  assert.notDeepEqual(await readTable(page), afterPairs);
  assert.ok(Object.keys(table).length === 3);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a long run shows each finished part before the whole run ends', async () => {
  // Quick runs redraw once at their end; past PROGRESS_DELAY (200 ms) the parts stream in.
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + '?n=100&datasets=200&pairs=100');
  await waitReady(page, 60_000);
  const caption = '.scatter-grid + .caption';
  assert.match(await page.textContent(caption), /m = 1024/);
  // The scatter (100 pairs) is a sliver of this run; the boxplots (200 × 100 pairs) are not.
  const generation = await page.getAttribute('.app', 'data-generation');
  await typeInto(page, '#control-m', '4096');
  await page.click('.run-anyway');
  // The new scatter is on screen while the run is unfinished (data-generation changes only
  // when every task is in).
  await page.waitForFunction(([selector, before]) =>
    /m = 4096/.test(document.querySelector(selector).textContent)
      && document.querySelector('.app').dataset.generation === before, [caption, generation], { timeout: 30_000 });
  await waitReady(page, 120_000);
  assert.notEqual(await page.getAttribute('.app', 'data-generation'), generation);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a probe beyond its limit is refused with a message', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + '?n=200&datasets=5&pairs=100&m=4096&probe=3&trials=100000');
  await waitReady(page, 60_000);
  await page.waitForFunction(() => /lower trials/.test(document.body.textContent));
  assert.match(await page.textContent('body'), /above its limit of 3e8/);
  assert.deepEqual(problems, []);
  await context.close();
});

/** A fresh context with `setup(context)` applied before the page loads; records problems. */
async function openWith(setup, url) {
  const context = await shared.browser.newContext({ viewport: { width: 1400, height: 1000 } });
  await setup(context);
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
  const wasm = [];
  const requests = [];
  page.on('request', (r) => {
    const path = new URL(r.url()).pathname;
    requests.push(path);
    if (path.endsWith('.wasm')) wasm.push(path);
  });
  await page.goto(url);
  return { page, problems, context, wasm, requests };
}

test('a browser with relaxed SIMD loads the page and the relaxed-SIMD worker only', async () => {
  const { page, problems, context, wasm, requests } = await openWith(async () => {}, shared.server.url + '?n=200&datasets=5&pairs=100');
  await waitReady(page);
  const workers = wasm.filter((w) => w.includes('kernel-worker'));
  assert.deepEqual([...new Set(workers)], ['/kernel-worker_bg.wasm']);
  assert.equal(wasm.filter((w) => !w.includes('kernel-worker')).length, 1, `the page's module once: ${wasm}`);
  // The first view's formulas (the theory charts') are in its module: MathML, none left as
  // its LaTeX, and the other parts' formulas (view-formulas.txt) not fetched.
  assert.ok(await page.locator('.formula-line math').count() >= 1);
  assert.equal(await page.locator('.formula-source').count(), 0);
  assert.ok(!requests.some((r) => r.endsWith('/view-formulas.txt')), `fetched: ${requests}`);
  assert.deepEqual(problems, []);
  await context.close();
});

test('without relaxed SIMD the simd128 worker computes the same table', async () => {
  const query = '?n=200&datasets=5&pairs=100&est=prf-hyp,hcexp-var,hcexp-opt';
  const relaxed = await openPage(shared.browser, shared.server.url + query);
  await waitReady(relaxed.page);
  const expected = await readTable(relaxed.page);
  await relaxed.context.close();
  // The page asks WebAssembly.validate about a 36-byte relaxed-SIMD module: say no.
  const { page, problems, context, wasm } = await openWith((c) => c.addInitScript(() => {
    const validate = WebAssembly.validate;
    WebAssembly.validate = (bytes) => (bytes.byteLength === 36 ? false : validate(bytes));
  }), shared.server.url + query);
  await waitReady(page);
  // The optimised A is computed by full-worker (kernel-worker is built without it).
  assert.deepEqual([...new Set(wasm.filter((w) => w.includes('-worker')))], ['/full-worker-simd128_bg.wasm']);
  const table = await readTable(page);
  assert.deepEqual(Object.keys(table).sort(), Object.keys(expected).sort());
  for (const [id, row] of Object.entries(expected)) {
    // f32 kernels with and without fused multiply-add: equal to the table's 3 digits or so.
    const [a, b] = [row['median-mse'], table[id]['median-mse']];
    assert.ok(Math.abs(a / b - 1) < 1e-2, `${id}: ${a} (relaxed) against ${b} (simd128)`);
  }
  assert.deepEqual(problems, []);
  await context.close();
});

test('the optimised A is downloaded when first chosen, not with the first view', async () => {
  const { page, problems, context, wasm } = await openWith(async () => {}, shared.server.url + '?n=200&datasets=5&pairs=100');
  await waitReady(page);
  assert.deepEqual([...new Set(wasm.filter((w) => w.includes('-worker')))], ['/kernel-worker_bg.wasm']);
  const before = await readTable(page);
  assert.ok(!('hcexp-opt' in before));
  await page.check('input[data-estimator="hcexp-opt"]');
  await page.waitForFunction(() => document.querySelector('tr[data-estimator="hcexp-opt"]') !== null
    && document.querySelector('.app')?.dataset.status === 'ready', null, { timeout: 60_000, polling: 50 });
  assert.ok(wasm.includes('/full-worker_bg.wasm'), `full-worker not loaded: ${wasm}`);
  const after = await readTable(page);
  // Same datasets and ω streams: the other estimators' numbers do not move.
  for (const [id, row] of Object.entries(before)) {
    assert.equal(after[id]['median-mse'], row['median-mse'], `${id} changed when hcexp-opt was added`);
  }
  assert.match(await page.textContent('tr[data-estimator="hcexp-opt"] .fitted'), /iterations/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('without any worker the page says so instead of computing', async () => {
  const { page, context } = await openWith((c) => c.route(/kernel-worker/, (route) => route.abort()), shared.server.url + '?n=200&datasets=5&pairs=100');
  await page.waitForFunction(() => document.querySelector('.app')?.dataset.status === 'error', null, { timeout: 30_000 });
  assert.match(await page.textContent('body'), /no Web Worker could start/);
  await context.close();
});
