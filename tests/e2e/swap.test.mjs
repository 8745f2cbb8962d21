// End-to-end: approximate attention inside the model (`src=text`, the model swap): every chosen
// method replaces softmax in the chosen layers of the real all-MiniLM-L6-v2 in the model worker;
// the page answers which method keeps the embedding within cosine 0.99 and at what cost, ranks the
// retrieval set exactly and with each method, and trains the Hedgehog maps with their curve.
// The model file must be in dist/model/ (scripts/test.sh fetches it). Any page or console error
// fails a test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, sharedServerAndBrowser } from './harness.mjs';

const shared = sharedServerAndBrowser();

/** Waits until every job of the current swap plan is answered (and the plan has jobs). */
async function waitSwapDone(page, timeout = 240_000) {
  await page.waitForFunction(() => {
    const failed = document.querySelector('.model-status')?.dataset.modelState === 'failed';
    if (failed) throw new Error(document.querySelector('.model-status').textContent);
    const a = document.querySelector('.swap-answer');
    return a && Number(a.dataset.swapTotal) > 0 && a.dataset.swapDone === a.dataset.swapTotal;
  }, null, { timeout, polling: 200 });
}

const TEXT = 'The quick brown fox jumps over the lazy dog.';

test('model swap: the answer, every budget, Hedgehog trained and the retrieval side by side', async () => {
  const query = `?view=attention&src=text&methods=prf-pos,window&window=1024&features=64&swapdraws=2&hhsteps=20&text=${encodeURIComponent(TEXT)}`;
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + query);
  await waitSwapDone(page);
  // Four budgets of Performer, the window once, the training, Hedgehog's swap, three retrievals.
  assert.equal(await page.getAttribute('.swap-answer', 'data-swap-total'), '10');
  // A window of L keys is softmax itself: it keeps the embedding, and the answer names it.
  assert.ok(Number(await page.getAttribute('.swap-answer', 'data-swap-keeping')) >= 1);
  const answer = await page.textContent('.swap-answer');
  assert.match(answer, /At L = 12 tokens, softmax replaced in every layer: \d+ of 6 runs keep the sentence embedding within cosine 0\.99/);
  assert.match(answer, /multiply-adds in attention per forward against softmax's/);
  assert.match(answer, /Retrieval: \d of 3 methods keep the exact best candidate on every draw/);
  assert.match(await page.textContent('.learned-line'), /^Hedgehog, trained on another text: cosine 0\.\d{3} against the best random map's 0\.\d{3} at m = 64 \(prf-pos\)/);
  assert.match(await page.textContent('.swap-progress'), /all 10 jobs of the model swap computed; each random method drawn 2 times/);
  // Performer at every budget; more features move the embedding less (0.3 apart at these m,
  // against a spread of about 0.05 per draw).
  const prf = await page.$$eval('.swap-table tr[data-method="prf-pos"] td[data-m]', (cells) => cells.map((c) => c.textContent));
  assert.equal(prf.length, 4);
  for (const cell of prf) assert.match(cell, /^0\.\d{4} ± 0\.\d{4}/);
  assert.ok(parseFloat(prf[3]) > parseFloat(prf[0]), prf.join(' | '));
  assert.match(await page.textContent('.swap-table tr[data-method="window"]'), /1\.0000 \(no m\)|0\.99\d\d \(no m\)/);
  // The Hedgehog maps: trained, scored on a held-out text, in the table.
  assert.equal(await page.getAttribute('.hedgehog-caption', 'data-trained'), 'true');
  assert.match(await page.textContent('.hedgehog-caption'), /20 Adam steps on a \d+-token text.*KL per row on the held-out/);
  assert.match(await page.getAttribute('canvas[data-chart="hedgehog"]', 'aria-label'), /KL on the training text/);
  assert.match(await page.textContent('.swap-table tr[data-method="hedgehog"]'), /0\.\d{4}/);
  // Retrieval: every method and Hedgehog, the exact ranking beside the window's (the same order).
  assert.equal(await page.$$eval('.retrieval-table tbody tr', (r) => r.length), 3);
  await page.click('.retrieval-table tr[data-method="window"] button');
  const orders = await page.$$eval('.rankings ol.ranking', (lists) => lists.map((l) => [...l.querySelectorAll('li')].map((i) => i.dataset.candidate)));
  assert.equal(orders.length, 2);
  assert.equal(orders[0].length, 10);
  assert.deepEqual(orders[1], orders[0]);
  assert.match(await page.textContent('.retrieval-table tr[data-method="window"] .top1'), /100%/);
  // The charts are drawn from the answers (their text alternatives carry the numbers).
  assert.match(await page.getAttribute('canvas[data-chart="swap-cosine"]', 'aria-label'), /prf-pos: 16 → /);
  assert.match(await page.getAttribute('canvas[data-chart="swap-cost"]', 'aria-label'), /softmax \d\.\d+e\d/);
  // A later visit (a reload, the same browser): the maps are kept (Cache Storage), checked, not
  // trained again, and swap in the same.
  assert.equal(await page.getAttribute('.hedgehog-caption', 'data-train-kept'), 'false');
  const cosines = async () => (await page.textContent('.swap-table tr[data-method="hedgehog"]')).match(/[01]\.\d{4}/g);
  const hedgehogRow = await cosines();
  const curveLabel = await page.getAttribute('canvas[data-chart="hedgehog"]', 'aria-label');
  await page.waitForTimeout(500);
  await page.reload();
  await waitSwapDone(page);
  assert.equal(await page.getAttribute('.hedgehog-caption', 'data-train-kept'), 'true');
  assert.match(await page.textContent('.hedgehog-caption'), /^kept from an earlier visit \(trained in \d+\.\d s then/);
  assert.deepEqual(await cosines(), hedgehogRow);
  assert.equal(await page.getAttribute('canvas[data-chart="hedgehog"]', 'aria-label'), curveLabel);
  assert.deepEqual(problems, []);
  await context.close();
});

test('model swap: an edited retrieval set, fewer layers, bad sets refused, none switches it off', async () => {
  const query = `?view=attention&src=text&methods=window&window=1024&hhsteps=0&text=${encodeURIComponent(TEXT)}`;
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + query);
  await waitSwapDone(page);
  // One line is not a retrieval set: the textarea's message, the set unchanged.
  await page.fill('textarea[name="retrieval"]', 'only a query');
  await page.dispatchEvent('textarea[name="retrieval"]', 'change');
  await page.waitForFunction(() => /one query line, then 2 to 20 candidate lines/.test(document.querySelector('.swap-retrieval')?.textContent ?? ''));
  // Three lines: a query and two candidates, ranked; the link carries the set.
  await page.fill('textarea[name="retrieval"]', 'Where do cats sleep?\nThe cat sleeps on the sofa.\nInterest rates rose again.');
  await page.dispatchEvent('textarea[name="retrieval"]', 'change');
  await page.waitForFunction(() => /retrieval=Where/.test(location.search));
  await page.waitForFunction(() => document.querySelectorAll('.rankings ol.exact li').length === 2, null, { timeout: 120_000 });
  const exact = await page.$$eval('.rankings ol.exact li', (items) => items.map((i) => i.textContent));
  assert.equal(exact.length, 2);
  assert.match(exact[0], /The cat sleeps on the sofa/);
  // Layer 5 left out: the link says so and the drift table shades five layers.
  await page.click('input[name="swap-layer-5"]');
  await page.waitForFunction(() => /swap=0%2C1%2C2%2C3%2C4|swap=0,1,2,3,4/.test(location.search));
  await page.waitForFunction(() => /softmax replaced in layers 0, 1, 2, 3, 4/.test(document.querySelector('.swap-answer')?.textContent));
  await waitSwapDone(page);
  assert.equal(await page.$$eval('.drift-table tr[data-method="window"] td.swapped', (c) => c.length), 5);
  // No layer: nothing is asked of the worker.
  for (const layer of [0, 1, 2, 3, 4]) await page.click(`input[name="swap-layer-${layer}"]`);
  await page.waitForFunction(() => /swap=none/.test(location.search));
  await page.waitForFunction(() => document.querySelector('.swap-answer')?.dataset.swapTotal === '0');
  // A stored passage in one click: its 32 tokens, the link carries it.
  await page.click('.text-presets button:nth-of-type(2)');
  await page.waitForFunction(() => document.querySelector('[data-text-tokens]')?.dataset.textTokens === '32', null, { timeout: 120_000 });
  await page.waitForFunction(() => /text=Random\+features\+replace/.test(location.search));
  assert.deepEqual(problems, []);
  await context.close();
});

test('model swap: the answers that do not depend on the text are shipped, checked, and the same computed here', async () => {
  // Taylor alone: its retrieval job and the Hedgehog maps' are the default plan's, so shipped.
  const query = `?view=attention&src=text&methods=taylor&text=${encodeURIComponent(TEXT)}`;
  const numbers = async (page) => ({
    rows: (await page.$$eval('.retrieval-table tbody tr', (rows) => rows.map((r) => [r.dataset.method, r.querySelector('.top1').textContent, r.querySelector('.tau').textContent]))).sort(),
    curve: (await page.textContent('.hedgehog-caption')).match(/KL per row on the held-out \d+-token text .*$/)[0],
    hedgehog: (await page.textContent('.swap-table tr[data-method="hedgehog"]')).match(/[01]\.\d{4}/g),
  });
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + query);
  await waitSwapDone(page);
  assert.equal(await page.getAttribute('.hedgehog-caption', 'data-train-origin'), 'shipped');
  assert.match(await page.textContent('.hedgehog-caption'), /^shipped with the lab \(trained by its build in \d+\.\d s on the same text and seed; every head's loss checked here/);
  assert.deepEqual(await page.$$eval('.retrieval-table tbody tr', (rows) => rows.map((r) => r.dataset.origin)), ['shipped', 'shipped']);
  assert.match(await page.textContent('.retrieval-table caption'), /2 of 2 rows are shipped with the lab/);
  const shipped = await numbers(page);
  // Computed here (the box unticked writes reuse=off): the same numbers as the page shows them.
  await page.uncheck('input[name="reuse"]');
  await page.waitForFunction(() => new URL(location.href).searchParams.get('reuse') === 'off');
  await waitSwapDone(page);
  await page.waitForFunction(() => document.querySelector('.hedgehog-caption')?.dataset.trainOrigin === 'computed', null, { timeout: 240_000 });
  await waitSwapDone(page);
  assert.deepEqual(await page.$$eval('.retrieval-table tbody tr', (rows) => rows.map((r) => r.dataset.origin)), ['computed', 'computed']);
  assert.deepEqual(await numbers(page), shipped);
  assert.deepEqual(problems, []);
  await context.close();
});

