// End-to-end: the language model's view (`view=lm`): SmolLM2-135M-Instruct in a Web Worker on
// the reader's text, in the release build, against the project's float64 reference
// (tests/fixtures/smollm-reference.json, scripts/smollm-reference.py). The GGUF file must be in
// dist/model/ (scripts/test.sh runs scripts/fetch-model.sh before the build). Every test fails
// on any page error or console error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { axeViolations, formatViolations, openPage, sharedServerAndBrowser } from './harness.mjs';

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
  const swapped = Number(await page.$eval('.lm-swapped', (e) => e.dataset.swappedPerplexity));
  assert.ok(Math.abs(swapped / elu5Perplexity - 1) < 2e-3, `swapped ${swapped} against ${elu5Perplexity}`);
  // The model's own tokens, one span each.
  assert.equal(await page.$$eval('.lm-token', (t) => t.length), sentence.ids.length);
  // A token chosen shows what the model expected there, both ways.
  await page.hover('.lm-token >> nth=3');
  await page.waitForFunction(() => /The model expected/.test(document.querySelector('.lm-detail')?.textContent ?? ''));
  assert.equal(await page.$$eval('.lm-detail ol.lm-next', (l) => l.length), 2);
  assert.equal(await page.$$eval('.lm-detail ol.lm-next li', (l) => l.length), 10);

  // A new text: a new answer, and the link carries it.
  await paste(page, 'Random features estimate the softmax kernel without bias.');
  await waitAnswer(page, 2);
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
