// End-to-end: the language model's view (`view=lm`): SmolLM2-135M-Instruct in a Web Worker on
// the reader's text, in the release build, against the project's float64 reference
// (tests/fixtures/smollm-reference.json, scripts/smollm-reference.py). The GGUF file must be in
// dist/model/ (scripts/test.sh runs scripts/fetch-model.sh before the build). Every test fails
// on any page error or console error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { axeViolations, cli, formatViolations, openPage, serveDist, sharedServerAndBrowser } from './harness.mjs';

const shared = sharedServerAndBrowser();
const reference = JSON.parse(readFileSync(new URL('../fixtures/smollm-reference.json', import.meta.url), 'utf8'));
const sentence = reference.strings.find((s) => s.name === 'sentence');

/** Waits for answer number `count` (or any, without it); fails at once if the model failed. */
async function waitAnswer(page, count, timeout = 180_000) {
  await page.waitForFunction((count) => {
    const status = document.querySelector('.lm-status');
    if (status?.dataset.lmState === 'failed') throw new Error(`language model failed: ${status.textContent}`);
    const shown = Number(document.querySelector('.lm-figure')?.dataset.answer ?? 0);
    return count === undefined ? shown > 0 : shown >= count;
  }, count, { timeout, polling: 200 });
}

/** Sets the text box's value as a paste does (one input event). */
async function paste(page, text) {
  await page.$eval('textarea[name="lm-text"]', (area, text) => {
    area.value = text;
    area.dispatchEvent(new Event('input', { bubbles: true }));
  }, text);
}

test('language model: the page\'s perplexities equal the float64 reference, exact and with elu + 1 in layer 5', async () => {
  const { page, problems, context } = await openPage(shared.browser,
    `${shared.server.url}?view=lm&lmmethod=elu&lmlayers=5&text=${encodeURIComponent(sentence.text)}`);
  const requests = [];
  page.on('request', (r) => requests.push(new URL(r.url()).pathname));
  await waitAnswer(page, 1);
  assert.match(await page.textContent('.lm-status'), /SmolLM2-135M-Instruct ready: 98\.4 MB/);
  const exact = Number(await page.$eval('.lm-exact', (e) => e.dataset.perplexity));
  assert.ok(Math.abs(exact / sentence.perplexity - 1) < 2e-3, `exact ${exact} against ${sentence.perplexity}`);
  const elu5 = sentence.swaps.find((s) => s.method === 'elu' && s.layers.length === 1 && s.layers[0] === 5);
  const elu5Perplexity = Math.exp(elu5.losses.reduce((a, b) => a + b, 0) / elu5.losses.length);
  // The exact report is shown as soon as it is in; the swap follows.
  await page.waitForSelector('.lm-swapped[data-pending-draws="0"][data-swapped-perplexity]');
  const swapped = Number(await page.$eval('.lm-swapped', (e) => e.dataset.swappedPerplexity));
  assert.ok(Math.abs(swapped / elu5Perplexity - 1) < 2e-3, `swapped ${swapped} against ${elu5Perplexity}`);
  // The per-layer chart: every layer's bar, and layer 5's equal to the swap in layer 5 alone
  // (both start from the same exact states: the same number to the last digit shown).
  await page.waitForFunction(() => document.querySelector('.lm-layer-chart')?.dataset.done === 'true', null, { timeout: 180_000 });
  assert.equal(await page.$eval('.lm-layer-chart', (c) => c.dataset.bars), '30');
  // Shared by two workers where there are two cores, the second handed the first's file.
  if (await page.evaluate(() => navigator.hardwareConcurrency) >= 2) {
    assert.equal(await page.$eval('.lm-layer-chart', (c) => c.dataset.parts), '2');
  }
  assert.match(await page.textContent('.lm-layers'), /All 30 layers in/);
  assert.equal(await page.$$eval('.lm-layer-numbers tbody tr', (rows) => rows.length), 30);
  const layer5 = await page.$eval('.lm-layer-numbers tr[data-layer="5"]', (row) => row.dataset.perplexity);
  assert.equal(Number(layer5).toFixed(3), swapped.toFixed(3), 'layer 5 alone in the chart and in the swap');
  // The model's own tokens, one span each.
  assert.equal(await page.$$eval('.lm-token', (t) => t.length), sentence.ids.length);
  // A token chosen shows what the model expected there, both ways.
  await page.hover('.lm-token >> nth=3');
  await page.waitForFunction(() => /The model expected/.test(document.querySelector('.lm-detail')?.textContent ?? ''));
  assert.equal(await page.$$eval('.lm-detail ol.lm-next', (l) => l.length), 2);
  assert.equal(await page.$$eval('.lm-detail ol.lm-next li', (l) => l.length), 10);

  // A new text: a new answer, and the link carries it.
  const answered = Number(await page.$eval('.lm-figure', (e) => e.dataset.answer));
  await paste(page, 'Random features estimate the softmax kernel without bias.');
  await waitAnswer(page, answered + 1);
  await page.waitForFunction(() => /Random features/.test([...document.querySelectorAll('.lm-token')].map((t) => t.textContent).join('')));
  await page.waitForFunction(() => /text=Random/.test(location.search) && /view=lm/.test(location.search));
  assert.ok(requests.filter((p) => p.endsWith('.gguf')).length === 1, 'the file is fetched once');
  const violations = await axeViolations(page, { include: [['.lm-view']] });
  assert.deepEqual(violations, [], formatViolations(violations));
  assert.deepEqual(problems, []);
  await context.close();
});

test('language model: bad input gets a sentence, never a page error', async () => {
  const { page, problems, context } = await openPage(shared.browser,
    `${shared.server.url}?view=lm&lmmethod=none&text=${encodeURIComponent('Hello')}`);
  await waitAnswer(page, 1);
  assert.match(await page.textContent('.lm-figure'), /a single token/);
  await paste(page, '');
  await waitAnswer(page, 2);
  assert.match(await page.textContent('.lm-figure'), /the text is empty/);
  // Control characters are scored like any byte.
  await paste(page, 'bell\u0007 and escape\u001b[0m and nul\u0000 here');
  await waitAnswer(page, 3);
  assert.ok(Number(await page.$eval('.lm-exact', (e) => e.dataset.perplexity)) > 1);
  // Over 1,024 tokens: refused with the count, then a short text is scored again.
  await paste(page, 'one two '.repeat(600));
  await waitAnswer(page, 4);
  assert.match(await page.textContent('.lm-figure'), /the text has \d+ tokens; at most 1024 are read/);
  await paste(page, 'A short text again.');
  await waitAnswer(page, 5);
  assert.ok(Number(await page.$eval('.lm-exact', (e) => e.dataset.perplexity)) > 1);
  // A layer outside the model: refused beside the box, the configuration kept.
  await page.fill('#control-lmlayers', '40');
  // A change event, as leaving the box or pressing Enter fires (Firefox over WebDriver BiDi
  // does not move the focus on a pressed Tab).
  await page.$eval('#control-lmlayers', (box) => box.dispatchEvent(new Event('change', { bubbles: true })));
  await page.waitForFunction(() => /from 0 to 29/.test(document.querySelector('.lm-view aside')?.textContent ?? ''));
  // A method without a causal form (from a link) is named as such.
  await page.goto(`${shared.server.url}?view=lm&lmmethod=nystrom&lmlayers=3&text=${encodeURIComponent('The cat sat on the mat.')}`);
  await waitAnswer(page, 1);
  await page.waitForFunction(() => /no causal form/.test(document.querySelector('.lm-swapped')?.textContent ?? ''));
  assert.deepEqual(problems, []);
  await context.close();
});

test('language model: a random method\'s draws, shared by two workers, give the command line\'s swap', async () => {
  // Performer's positive features in layer 5, m = 16, three draws: the first worker scores the
  // text while the second runs draw 0, then the draws left are split over both workers (each
  // computes half of the text's rows); the page gathers them in draw order as kernel-lab lm
  // does on one thread. The text is long enough to split (32 tokens and more).
  const text = 'The quick brown fox jumps over the lazy dog near the river bank, while the miller '
    + 'counts the turns of his wheel from the old stone bridge and the children watch the boats.';
  const settings = ['--method', 'prf-pos', '--layers', '5', '--features', '16', '--swapdraws', '3'];
  const expected = JSON.parse(cli(['lm', '--text', text, ...settings])).swap;
  const { page, problems, context } = await openPage(shared.browser,
    `${shared.server.url}?view=lm&lmmethod=prf-pos&lmlayers=5&features=16&swapdraws=3&lmchart=off&text=${encodeURIComponent(text)}`);
  await waitAnswer(page, 1);
  await page.waitForSelector('.lm-swapped[data-pending-draws="0"]', { timeout: 120_000 });
  const swapped = Number(await page.$eval('.lm-swapped', (e) => e.dataset.swappedPerplexity));
  // The page's f32 arithmetic (fused multiply-adds in WebAssembly) against the native build's:
  // rounding apart, the same three draws. Another draw would move it by its spread.
  assert.ok(Math.abs(swapped / expected.perplexity.mean - 1) < 1e-3,
    `page ${swapped} against the command line's ${expected.perplexity.mean} (sd ${expected.perplexity.sd})`);
  assert.ok(expected.perplexity.sd > 1e-2 * expected.perplexity.mean, 'the draws differ: the test can tell them apart');
  assert.match(await page.textContent('.lm-swapped'), /over 3 draws/);
  assert.equal(await page.$eval('.lm-exact', (e) => e.dataset.exactKept), 'false');
  // The method off, then on again, on the same text: the exact score is kept (no second exact
  // forward), the draws start from the first worker's kept exact states (the second's from
  // the embeddings), and the swap is the same to the last digit shown.
  const before = Number(await page.$eval('.lm-figure', (e) => e.dataset.answer));
  const exactShown = await page.$eval('.lm-exact', (e) => e.dataset.perplexity);
  await page.selectOption('#control-lmmethod', 'none');
  await waitAnswer(page, before + 1);
  assert.equal(await page.$$eval('.lm-swapped', (e) => e.length), 0);
  assert.equal(await page.$eval('.lm-exact', (e) => e.dataset.exactKept), 'true');
  // Both workers have the model: on the kept text every draw is split over the two, and
  // gives the draws computed whole before, to the last digit shown.
  await page.waitForSelector('.lm-figure[data-workers="2"]', { timeout: 60_000 });
  await page.selectOption('#control-lmmethod', 'prf-pos');
  await page.waitForFunction((before) => Number(document.querySelector('.lm-figure')?.dataset.answer) > before + 1
    && document.querySelector('.lm-swapped')?.dataset.pendingDraws === '0', before, { timeout: 120_000 });
  assert.equal(await page.$eval('.lm-swapped', (e) => e.dataset.splitDraws), '3');
  assert.match(await page.textContent('.lm-swapped'), /a forward on both workers/);
  assert.equal(await page.$eval('.lm-exact', (e) => e.dataset.exactKept), 'true');
  assert.equal(await page.$eval('.lm-exact', (e) => e.dataset.perplexity), exactShown);
  assert.equal(Number(await page.$eval('.lm-swapped', (e) => e.dataset.swappedPerplexity)), swapped);
  assert.match(await page.textContent('.lm-exact'), /kept from before, so only the swap ran, from layer 5 on/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('language model: on a plain host (not cross-origin isolated) the two workers split each forward over their port, with the same numbers', async () => {
  // The page above, served without COOP/COEP: no shared memory, so the workers' shares of each
  // layer travel over their MessagePort instead of shared boards.
  const text = 'The quick brown fox jumps over the lazy dog near the river bank, while the miller '
    + 'counts the turns of his wheel from the old stone bridge and the children watch the boats.';
  const settings = ['--method', 'prf-pos', '--layers', '5', '--features', '16', '--swapdraws', '3'];
  const expected = JSON.parse(cli(['lm', '--text', text, ...settings])).swap;
  const plain = await serveDist(undefined, { isolated: false });
  try {
    const { page, problems, context } = await openPage(shared.browser,
      `${plain.url}?view=lm&lmmethod=prf-pos&lmlayers=5&features=16&swapdraws=3&lmchart=off&text=${encodeURIComponent(text)}`);
    assert.equal(await page.evaluate(() => crossOriginIsolated), false);
    await page.waitForSelector('.lm-swapped[data-pending-draws="0"][data-swapped-perplexity]', { timeout: 120_000 });
    const first = Number(await page.$eval('.lm-swapped', (e) => e.dataset.swappedPerplexity));
    assert.ok(Math.abs(first / expected.perplexity.mean - 1) < 1e-3, `page ${first} against ${expected.perplexity.mean}`);
    await page.waitForSelector('.lm-figure[data-workers="2"]', { timeout: 60_000 });
    const before = Number(await page.$eval('.lm-figure', (e) => e.dataset.answer));
    await page.selectOption('#control-lmmethod', 'none');
    await waitAnswer(page, before + 1);
    const again = Number(await page.$eval('.lm-figure', (e) => e.dataset.answer));
    await page.selectOption('#control-lmmethod', 'prf-pos');
    await page.waitForFunction((again) => Number(document.querySelector('.lm-figure')?.dataset.answer) > again
      && document.querySelector('.lm-swapped')?.dataset.pendingDraws === '0', again, { timeout: 120_000 });
    assert.equal(await page.$eval('.lm-swapped', (e) => e.dataset.splitDraws), '3');
    assert.equal(Number(await page.$eval('.lm-swapped', (e) => e.dataset.swappedPerplexity)), first);
    assert.deepEqual(problems, []);
    await context.close();
  } finally {
    await plain.close();
  }
});

test('language model: leaving the view while the file downloads loses nothing', async () => {
  // The reader leaves as soon as the worker has started, before the 98 MB are in (the state
  // read in the same task as the click says so).
  const { page, problems, context } = await openPage(shared.browser, 'about:blank');
  await page.goto(`${shared.server.url}?view=lm&lmmethod=none&text=${encodeURIComponent(sentence.text)}`);
  await page.waitForFunction(() => document.querySelector('.lm-status')?.dataset.lmState === 'downloading');
  const stateAtClick = await page.evaluate(() => {
    const state = document.querySelector('.lm-status')?.dataset.lmState;
    document.querySelector('button[data-view="kernel"]').click();
    return state;
  });
  assert.equal(stateAtClick, 'downloading');
  await page.waitForFunction(() => document.querySelector('.app')?.dataset.status === 'ready', null, { timeout: 60_000 });
  await page.click('button[data-view="lm"]');
  await waitAnswer(page, 1);
  const exact = Number(await page.$eval('.lm-exact', (e) => e.dataset.perplexity));
  assert.ok(Math.abs(exact / sentence.perplexity - 1) < 2e-3, `exact ${exact} against ${sentence.perplexity}`);
  assert.deepEqual(problems, []);
  await context.close();
});

test('language model: a download that breaks off is named', async () => {
  const { page, problems, context } = await openPage(shared.browser, 'about:blank');
  await context.route('**/model/*.gguf', (route) => route.abort('connectionreset'));
  await page.goto(`${shared.server.url}?view=lm`);
  await page.waitForFunction(() => document.querySelector('.lm-status')?.dataset.lmState === 'failed', null, { timeout: 60_000 });
  assert.match(await page.textContent('.lm-status'), /not served: run scripts\/fetch-model\.sh/);
  assert.deepEqual(problems.filter((p) => !/Failed to load resource|NetworkError|net::/.test(p)), []);
  await context.close();
});

test('language model: a missing or damaged file is named, with how to get it', async () => {
  for (const [body, status, expected] of [
    ['not found', 404, /not served: run scripts\/fetch-model\.sh/],
    ['x'.repeat(1000), 200, /SHA-256 .* expected b179c952/],
  ]) {
    const { page, problems, context } = await openPage(shared.browser, 'about:blank');
    await context.route('**/model/*.gguf', (route) => route.fulfill({ status, body }));
    await page.goto(`${shared.server.url}?view=lm`);
    await page.waitForFunction(() => document.querySelector('.lm-status')?.dataset.lmState === 'failed', null, { timeout: 60_000 });
    assert.match(await page.textContent('.lm-status'), expected);
    // The other views go on: the kernel view computes.
    await page.click('button[data-view="kernel"]');
    await page.waitForFunction(() => document.querySelector('.app')?.dataset.status === 'ready', null, { timeout: 60_000 });
    assert.deepEqual(problems.filter((p) => !/404|Failed to load resource/.test(p)), []);
    await context.close();
  }
});

test('language model: the text continued token by token, exactly and with linear layers as recurrent networks, as the command line continues it', async () => {
  // Performer's positive features in layers 3, 10 and 20, their maps fitted on the text, then
  // 32 greedy tokens each way: the same ids as kernel-lab lm --generate (the same decoder).
  const text = 'The cat sat on the mat because it was warm, and the dog';
  const settings = ['--method', 'prf-pos', '--layers', '3,10,20', '--generate', '32'];
  const expected = JSON.parse(cli(['lm', '--text', text, ...settings]));
  const { page, problems, context } = await openPage(shared.browser,
    `${shared.server.url}?view=lm&lmmethod=prf-pos&lmlayers=3,10,20&lmchart=off&lmgen=32&text=${encodeURIComponent(text)}`);
  const done = (decoding) => page.waitForSelector(`.lm-continue[data-decoding="${decoding}"][data-done="true"]`, { timeout: 180_000 });
  await done('exact');
  await done('linear');
  for (const [decoding, want] of [['exact', expected.exact], ['linear', expected.linear]]) {
    const column = await page.$eval(`.lm-continue[data-decoding="${decoding}"]`, (c) => ({ ...c.dataset, text: c.querySelector('.lm-continue-text').textContent }));
    assert.equal(column.failed, 'false', `${decoding}: ${column.text}`);
    assert.equal(column.ids, want.tokens.map((t) => t.id).join(','), `${decoding}: the command line's tokens`);
    assert.ok(Number(column.tokensPerSecond) > 0, `${decoding}: a speed`);
  }
  // The chart of what one layer keeps, and the crossover computed from the decoders' numbers.
  await page.waitForFunction(() => /from position \d+ on/.test(document.querySelector('.lm-crossover')?.textContent ?? ''));
  assert.ok(await page.$eval('canvas[data-chart="lm-memory"]', (c) => c.width > 0 && /kilobytes|KB/.test(c.getAttribute('aria-label'))));
  // More tokens from the control: the link says so, and the greedy continuation starts the same.
  await page.fill('#lm-control-lmgen', '40');
  await page.$eval('#lm-control-lmgen', (box) => box.dispatchEvent(new Event('change', { bubbles: true })));
  await page.waitForFunction(() => /lmgen=40/.test(location.search));
  await page.waitForSelector('.lm-continue[data-decoding="exact"][data-done="true"][data-tokens="40"]', { timeout: 180_000 });
  const longer = await page.$eval('.lm-continue[data-decoding="exact"]', (c) => c.dataset.ids);
  assert.ok(longer.startsWith(expected.exact.tokens.map((t) => t.id).join(',')), longer);
  const violations = await axeViolations(page, { include: [['.lm-continuations']] });
  assert.deepEqual(violations, [], formatViolations(violations));
  assert.deepEqual(problems, []);
  await context.close();
});

test('language model: attention transfer in two layers wins the perplexity back and continues the text, as the command line does, and stops when asked', async () => {
  // Layers 0 and 1 (the costliest on most texts), 10 Adam steps each, on the two workers: the
  // same training curves as kernel-lab lm --train-layers (the same code), the zero-shot swap
  // far above exact, the trained maps far below the zero-shot swap.
  const text = 'Every spring the river floods the low meadows, and the farmers move their sheep to the hills until the water falls.';
  const continued = JSON.parse(cli(['lm', '--text', text, '--train-layers', '0,1', '--lmsteps', '10', '--generate', '8']));
  const expected = continued.transfer;
  const { page, problems, context } = await openPage(shared.browser,
    `${shared.server.url}?view=lm&lmmethod=none&lmchart=off&lmtrain=0,1&lmsteps=10&lmgen=8&text=${encodeURIComponent(text)}`);
  await page.waitForSelector('.lm-transfer[data-done="true"]', { timeout: 240_000 });
  // Once judged, the text is continued with the two layers linear, their trained maps run as
  // recurrent networks: the command line's tokens. The two continuations decode side by side
  // (either may end first): both are waited for.
  for (const decoding of ['exact', 'transferred']) {
    await page.waitForSelector(`.lm-continue[data-decoding="${decoding}"][data-done="true"]`, { timeout: 120_000 });
  }
  for (const decoding of ['exact', 'transferred']) {
    const ids = await page.$eval(`.lm-continue[data-decoding="${decoding}"]`, (c) => c.dataset.ids);
    assert.equal(ids, continued[decoding].tokens.map((t) => t.id).join(','), `${decoding}: the command line's tokens`);
  }
  const shown = await page.$eval('.lm-transfer', (t) => ({ ...t.dataset }));
  const curves = Object.fromEntries(shown.trainKl.split(';').map((c) => {
    const [layer, kl] = c.split(':');
    return [layer, kl.split(' ').map(Number)];
  }));
  for (const layer of expected.layers) {
    const want = layer.curve.map((p) => p.train_kl);
    const got = curves[layer.layer];
    assert.equal(got.length, want.length, `layer ${layer.layer}: every step`);
    got.forEach((kl, step) => assert.ok(Math.abs(kl - want[step]) <= 1e-6 * want[step],
      `layer ${layer.layer} step ${step}: page ${kl}, command line ${want[step]}`));
  }
  const v = expected.verdict;
  for (const [name, want] of [['exact', v.exact], ['zeroShot', v.zero_shot], ['transferred', v.transferred]]) {
    assert.ok(Math.abs(Number(shown[name]) - want) <= 1e-4 * want, `${name}: page ${shown[name]}, command line ${want}`);
  }
  assert.ok(v.zero_shot > 2 * v.exact && v.transferred < v.zero_shot / 2, JSON.stringify(v));
  assert.ok(await page.$eval('canvas[data-chart="lm-transfer"]', (c) => c.width > 0 && /layer 0: training/.test(c.getAttribute('aria-label'))));
  // More steps from the control: the link says so; Stop ends the training where it is.
  await page.fill('#lm-control-lmsteps', '200');
  await page.$eval('#lm-control-lmsteps', (box) => box.dispatchEvent(new Event('change', { bubbles: true })));
  await page.waitForFunction(() => /lmsteps=200/.test(location.search) && /lmtrain=0-1/.test(location.search));
  await page.waitForFunction(() => Number(document.querySelector('.lm-transfer')?.dataset.points ?? 0) >= 3);
  await page.click('.lm-transfer-stop');
  await page.waitForSelector('.lm-transfer[data-stopped="true"]');
  const stoppedAt = await page.$eval('.lm-transfer', (t) => Number(t.dataset.points));
  await page.waitForTimeout(1500);
  assert.equal(await page.$eval('.lm-transfer', (t) => Number(t.dataset.points)), stoppedAt, 'no step after Stop');
  const violations = await axeViolations(page, { include: [['.lm-transfer-figure']] });
  assert.deepEqual(violations, [], formatViolations(violations));
  assert.deepEqual(problems, []);
  await context.close();
});
