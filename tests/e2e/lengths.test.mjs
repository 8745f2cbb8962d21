// End-to-end: the attention view's length study ("where linear attention pays"), in the
// release build, small enough to be quick (lmax=256: L = 128 and 256; m = 16: m = 4 and 16).
// It times in the workers, so only shapes and presence are checked, never a time. The study
// streams: each unit (a length at a head size, bidirectional or causal) is drawn as it is
// measured, with a progress bar and a stop button; `recordLengths` (harness.mjs) logs each
// state the section shows, so that a state passed between two polls is still seen.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { openPage, typeInto, axeViolations, formatViolations, sharedServerAndBrowser, browserName, recordLengths, waitAttentionReady } from './harness.mjs';

const shared = sharedServerAndBrowser();

/** Waits for the study's status `want` (fails at once on `error`, saying why). */
async function waitLengths(page, want, timeout = 180_000) {
  await page.waitForFunction((want) => {
    const section = document.querySelector('.lengths');
    const status = section?.dataset.lengthsStatus;
    if (status === 'error') throw new Error(`length study error: ${section.querySelector('.error')?.textContent}`);
    return status === want;
  }, want, { timeout, polling: 200 });
}

/** The share of sampled pixels of canvas `name` that are not white. */
function ink(page, name) {
  return page.$eval(`canvas[data-chart="${name}"]`, (c) => {
    if (c.width === 0) return 0;
    const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
    let inked = 0;
    for (let i = 0; i < data.length; i += 16) if (data[i] < 245 || data[i + 1] < 245 || data[i + 2] < 245) inked += 1;
    return inked / (data.length / 16);
  });
}

const LINK = '?view=attention&lmax=256&methods=prf-pos,elu&features=16';

/**
 * What the log says of a run that ended: a progress bar while it ran (a <progress> whose value
 * and maximum are the units done and all, with a label saying so), a point on screen before
 * the last unit, and the units all done at the end, the bar gone.
 */
async function checkStreamed(page, total) {
  const log = await page.evaluate(() => window.__lengthsLog);
  const running = log.filter((e) => e.status === 'computing' && e.bar);
  assert.ok(running.length > 0, `a progress bar while it ran: ${JSON.stringify(log)}`);
  // (The bar and the section's attributes are set by separate effects: a state logged between
  // them may pair one's new value with the other's old one, so each is checked on its own.)
  for (const e of running) {
    assert.equal(e.bar.max, String(total));
    assert.ok(Number(e.bar.value) >= 0 && Number(e.bar.value) < total, JSON.stringify(e));
    assert.equal(e.bar.label, `length study: ${e.bar.value} of ${total} pieces measured`);
  }
  const early = log.find((e) => e.status === 'computing' && e.points > 0 && e.charts > 0);
  assert.ok(early && early.done < total, `a point drawn before the end: ${JSON.stringify(log)}`);
  const last = log.at(-1);
  assert.equal(last.status, 'ready');
  assert.equal(last.bar, null);
  assert.equal(last.done, total);
  assert.equal(last.total, total);
}

test('length study: table, charts, sentences and CSV from a link; off hides it', async () => {
  const { page, problems, context } = await openPage(shared.browser, `${shared.server.url}${LINK}`, { init: recordLengths });
  try {
    await waitLengths(page, 'ready');
    // Two lengths × two head sizes × (bidirectional, causal), the first of them split in exact
    // attention alone and the methods: nine units, streamed.
    await checkStreamed(page, 9);
    // The other parts answered as well (they run in other workers of the pool).
    await page.waitForSelector('.attention-view[data-attention-status="ready"]', { timeout: 120_000 });

    // One row per head size × method × m × form: Performer at m = 4 and 16, elu + 1 once (its
    // map has no m), in three forms, at d = 32 and 64; each with a crossover cell.
    const rows = await page.$$eval('.lengths-table tbody tr[data-method]', (trs) => trs.map((tr) => ({
      key: `${tr.dataset.d} ${tr.dataset.method} ${tr.dataset.m} ${tr.dataset.form}`,
      kind: tr.dataset.kind,
      crossover: tr.querySelector('td.crossover').textContent,
    })));
    const expected = [];
    for (const d of [32, 64]) {
      for (const [method, sizes] of [['prf-pos', ['4', '16']], ['elu', ['–']]]) {
        for (const m of sizes) {
          for (const form of ['bidirectional', 'causal-prefix', 'causal']) expected.push(`${d} ${method} ${m} ${form}`);
        }
      }
    }
    assert.deepEqual(rows.map((r) => r.key).sort(), expected.sort());
    // A crossover needs a length where both times are above zero: Firefox's clock in a page
    // that is not cross-origin isolated ticks in whole milliseconds, so at L ≤ 256 a method's
    // run often reads 0 ms there, and its cell says "–" (Chromium's ticks are 0.1 ms).
    for (const row of rows) {
      if (row.kind === 'none') assert.equal(row.crossover, '–', row.key);
      else assert.match(row.crossover, /^(≤ [\d,]+|≈ [\d,]+|> [\d,]+)$/, `${row.key}: ${row.crossover}`);
    }
    const crossovers = Number(await page.getAttribute('.lengths', 'data-lengths-crossovers'));
    assert.equal(crossovers, rows.filter((r) => r.kind !== 'none').length);
    if (browserName === 'chromium') assert.equal(crossovers, rows.length);

    // Both charts drawn, with text alternatives naming exact attention's times.
    for (const name of ['lengths-d32', 'lengths-d64']) {
      const share = await ink(page, name);
      assert.ok(share > 0.02, `${name}: ${share} of its pixels inked`);
      assert.match(await page.getAttribute(`canvas[data-chart="${name}"]`, 'aria-label'), /exact attention [\d.]+ ms at L = 128 to [\d.]+ ms at L = 256/);
    }
    // The sentences are read from the report: one per head size at the chosen threshold, the
    // rates; another threshold rewrites them.
    const sentences = () => page.$$eval('[data-note="lengths-threshold"]', (ps) => ps.map((p) => p.textContent));
    const before = await sentences();
    assert.equal(before.length, 2);
    assert.match(before[0], /^At d = 32 \(bidirectional\), against exact attention:.*within a row error of 0\.1/);
    assert.match(before[1], /^At d = 64 \(bidirectional\), against exact attention:/);
    await page.selectOption('select[name="lengths-tv"]', '0.5');
    await page.waitForFunction(() => [...document.querySelectorAll('[data-note="lengths-threshold"]')]
      .every((p) => /row error of 0\.5/.test(p.textContent)));
    assert.match(await page.textContent('.lengths-notes'), /Exact attention ran at [\d.]+ GMAC\/s \(best over L\); the model forward's dense kernel at [\d.]+ GMAC\/s on this device\./);
    // The form selector redraws the charts for the causal forms.
    await page.selectOption('select[name="lengths-form"]', 'causal-prefix');
    await page.waitForFunction(() => /causal \(prefix sums\)/.test(document.querySelector('canvas[data-chart="lengths-d64"]').getAttribute('aria-label')));

    // A setting the study does not read (the synthetic data's L) recomputes the other parts,
    // not the study: its timings are unchanged.
    const label = await page.getAttribute('canvas[data-chart="lengths-d32"]', 'aria-label');
    await typeInto(page, '#control-len', '64');
    await page.waitForFunction(() => /len=64/.test(location.search));
    await page.waitForSelector('.attention-view[data-attention-status="ready"]', { timeout: 120_000 });
    assert.equal(await page.getAttribute('.lengths', 'data-lengths-status'), 'ready');
    assert.equal(await page.getAttribute('canvas[data-chart="lengths-d32"]', 'aria-label'), label);

    // The CSV: the command line's header, a row per measured point (2 lengths). (Last but one:
    // in Firefox, keys typed after a download miss the field's selection.)
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('.lengths button.download-csv')]);
    assert.equal(download.suggestedFilename(), 'length-study.csv');
    const csv = readFileSync(await download.path(), 'utf8').trim().split('\n');
    assert.match(csv[0], /^d,kernel,m,features,form,len,ms,model_ms,/);
    // Per head size: 2 exact series and 9 method series, each at L = 128 and 256.
    assert.equal(csv.length - 1, 2 * (2 + 9) * 2);
    assert.equal(Number(await page.getAttribute('.lengths', 'data-lengths-points')), csv.length - 1);

    // Off: the URL says lmax=0, the charts and table go.
    await page.selectOption('select[name="lmax"]', '0');
    await page.waitForFunction(() => /[?&]lmax=0(&|$)/.test(location.search));
    await waitLengths(page, 'off');
    assert.equal(await page.$$eval('canvas[data-chart^="lengths-"]', (c) => c.length), 0);
    assert.equal(await page.$$eval('.lengths-table', (t) => t.length), 0);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('length study: on from its control, accessible once computed', async () => {
  const { page, problems, context } = await openPage(shared.browser, `${shared.server.url}?view=attention&len=64&methods=elu&features=8`);
  try {
    await page.waitForSelector('.attention-view[data-attention-status="ready"]', { timeout: 120_000 });
    assert.equal(await page.getAttribute('.lengths', 'data-lengths-status'), 'off');
    await page.selectOption('select[name="lmax"]', '1024');
    await page.waitForFunction(() => /lmax=1024/.test(location.search));
    // The stored heads are fetched for synthetic data too (the sequences follow a real head).
    await waitLengths(page, 'ready', 300_000);
    const rows = await page.$$eval('.lengths-table tbody tr[data-method]', (r) => r.length);
    assert.equal(rows, 2 * 3, 'elu + 1 in three forms at two head sizes');
    const violations = await axeViolations(page);
    assert.equal(violations.length, 0, `${violations.length} axe violation(s):\n${formatViolations(violations)}`);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

test('length study: stop keeps what was measured; a new lmax, or timing alone, runs it again', async () => {
  // lmax = 4096: 25 units, the longest lengths' seconds long, so a stop lands mid-run.
  const { page, problems, context } = await openPage(shared.browser, `${shared.server.url}?view=attention&lmax=4096&methods=prf-pos,elu&features=16`);
  try {
    // Two units in: the first is exact attention alone, so a method's too.
    await page.waitForFunction(() => Number(document.querySelector('.lengths')?.dataset.lengthsDone) >= 2, null, { timeout: 120_000 });
    // The view's other parts in first: a part landing above the study can still move the Stop
    // button by a line or two (the kernel-against-attention table's rows are drawn while it
    // computes, its caption only when it lands), and a click sent as it moves lands on the
    // section (Firefox over BiDi: one run in three when the table itself moved it, 97 px).
    await waitAttentionReady(page);
    assert.equal(await page.getAttribute('.lengths', 'data-lengths-status'), 'computing');
    assert.equal(await page.getAttribute('.lengths progress', 'max'), '25');
    await page.click('.lengths button.lengths-stop');
    await waitLengths(page, 'stopped', 10_000);
    assert.equal(await page.$$eval('.lengths progress', (p) => p.length), 0);
    const done = Number(await page.getAttribute('.lengths', 'data-lengths-done'));
    assert.ok(done >= 2 && done < 25, `${done} units done`);
    assert.match(await page.textContent('.lengths [data-lengths-partial]'), new RegExp(`^Stopped after ${done} of 25 pieces`));
    // What was measured stays: its table rows and, in the CSV (named partial), its points.
    assert.ok(await page.$$eval('.lengths-table tbody tr[data-method]', (r) => r.length) > 0);
    const points = Number(await page.getAttribute('.lengths', 'data-lengths-points'));
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('.lengths button.download-csv')]);
    assert.equal(download.suggestedFilename(), 'length-study-partial.csv');
    const csv = readFileSync(await download.path(), 'utf8').trim().split('\n');
    assert.equal(csv.length - 1, points);
    // Nothing more arrives after the stop.
    await page.waitForTimeout(1500);
    assert.equal(Number(await page.getAttribute('.lengths', 'data-lengths-done')), done);
    assert.equal(await page.getAttribute('.lengths', 'data-lengths-status'), 'stopped');

    // A new configuration runs the study again, in full.
    await page.selectOption('select[name="lmax"]', '1024');
    await page.waitForFunction(() => /lmax=1024/.test(location.search));
    await waitLengths(page, 'ready', 120_000);
    assert.equal(await page.getAttribute('.lengths', 'data-lengths-total'), '17');
    assert.equal(await page.getAttribute('.lengths', 'data-lengths-done'), '17');
    assert.equal(await page.$$eval('.lengths [data-lengths-partial]', (p) => p.length), 0);

    // Timed one worker at a time: the study runs again, in full, and says so.
    await page.check('input[name="lengths-alone"]');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('lalone') === 'on');
    await page.waitForFunction(() => document.querySelector('.lengths')?.dataset.lengthsDone !== '17');
    await waitLengths(page, 'ready', 120_000);
    assert.equal(await page.getAttribute('.lengths', 'data-lengths-done'), '17');
    assert.match(await page.textContent('.lengths .caption'), /Timed on one worker at a time/);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});
