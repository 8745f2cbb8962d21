// End-to-end: the attention view on the causal language model's heads (`src=lm`):
// SmolLM2-135M's 270 query heads on the reader's text, in the language model's own workers
// (`model-worker?lm&heads`), in the release build. The GGUF file must be in dist/model/
// (scripts/test.sh runs scripts/fetch-model.sh before the build). Every test fails on any page
// error or console error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { openPage, sharedServerAndBrowser, typeInto, waitAttentionReady } from './harness.mjs';

const shared = sharedServerAndBrowser();
const reference = JSON.parse(readFileSync(new URL('../fixtures/smollm-reference.json', import.meta.url), 'utf8'));
const sentence = reference.strings.find((s) => s.name === 'sentence');

/** Waits until the language model is loaded in its heads workers. */
async function waitModel(page, timeout = 180_000) {
  await page.waitForFunction(() => {
    const state = document.querySelector('.model-status')?.dataset.modelState;
    if (state === 'failed') throw new Error(`model failed: ${document.querySelector('.model-status').textContent}`);
    return state === 'ready';
  }, null, { timeout, polling: 200 });
}

test('attention view on the language model\'s heads: causal methods only, every one of the 270 heads in the table', async () => {
  const { page, problems, context } = await openPage(shared.browser,
    `${shared.server.url}?view=attention&src=lm&layer=17&head=2&methods=prf-pos,elu,nystrom&focus=nystrom&text=${encodeURIComponent(sentence.text)}`);
  const requests = [];
  page.on('request', (r) => requests.push(new URL(r.url()).pathname));
  await waitModel(page);
  assert.match(await page.textContent('.model-status'), /SmolLM2-135M loaded: 134\.5 M parameters, 98\.4 MB in Q4_1 blocks/);
  await waitAttentionReady(page, 180_000);
  // The model's tokens (the reference's count), its head size, and the methods with a causal form.
  const caption = await page.$eval('.attention-table .caption', (e) => e.textContent);
  assert.match(caption, new RegExp(`L = ${sentence.ids.length} tokens, d = 64, dv = 64`));
  assert.deepEqual(await page.$$eval('.attention-table tr[data-method]', (rows) => rows.map((r) => r.dataset.method)), ['prf-pos', 'elu']);
  assert.match(await page.$eval('.lm-source-note', (e) => e.dataset.leftOut), /Nyström/);
  // The view's formulas as MathML: in the release build their table comes with the view
  // (view-formulas.txt), not in the first view's module; none is left as its LaTeX source.
  await page.waitForFunction(() => document.querySelectorAll('.attention-view math').length > 20
    && !document.querySelector('.formula-source'), null, { timeout: 30_000 });
  assert.match(await page.textContent('label.check:has([data-method="nystrom"])'), /no causal form/);
  // The sliders span the model: 30 layers, 9 heads.
  assert.equal(await page.$eval('.control:has(#control-layer) input[type="range"]', (e) => e.max), '29');
  assert.equal(await page.$eval('.control:has(#control-head) input[type="range"]', (e) => e.max), '8');
  await page.waitForSelector('.heads-table tr.wins', { timeout: 240_000 });
  assert.equal(await page.$$eval('.heads-table details tbody tr', (r) => r.length), 270);
  // Another head: the model is not fetched again.
  await typeInto(page, '#control-layer', '29');
  await page.waitForFunction(() => /layer=29/.test(location.search));
  await waitAttentionReady(page, 180_000);
  assert.equal(requests.filter((p) => p.endsWith('.gguf')).length, Math.min(2, await page.evaluate(() => navigator.hardwareConcurrency)));
  assert.equal(await page.$$eval('.attention-view .error', (e) => e.length), 0);
  // Away and back: the view is rebuilt, and still knows the model is loaded (the pool keeps
  // its workers' news), without a new download.
  await page.getByRole('tab', { name: 'Kernel values' }).click();
  await page.getByRole('tab', { name: 'Attention rows' }).click();
  await waitModel(page, 30_000);
  await waitAttentionReady(page, 180_000);
  assert.equal(requests.filter((p) => p.endsWith('.gguf')).length, Math.min(2, await page.evaluate(() => navigator.hardwareConcurrency)));
  assert.deepEqual(problems, []);
  await context.close();
});

test('attention view on the language model\'s heads: an empty text and a missing file get a sentence', async () => {
  const { page, problems, context } = await openPage(shared.browser,
    `${shared.server.url}?view=attention&src=lm&text=${encodeURIComponent('Hello there')}`);
  await waitModel(page);
  await waitAttentionReady(page, 180_000);
  // Nothing left to read: the parts say so (a lone space is a token of this model's, read as
  // a one-token sequence).
  await page.$eval('textarea[name="text"]', (area) => {
    area.value = '';
    area.dispatchEvent(new Event('input', { bubbles: true }));
  });
  await page.waitForFunction(() => [...document.querySelectorAll('.attention-view .error')].some((e) => /the text is empty: there is no token to read/.test(e.textContent)), null, { timeout: 60_000 });
  assert.equal(await page.$eval('.attention-view', (e) => e.dataset.attentionStatus), 'error');
  assert.deepEqual(problems, []);
  await context.close();

  const missing = await openPage(shared.browser, 'about:blank');
  await missing.context.route('**/model/*', (route) => route.fulfill({ status: 404, body: 'not found' }));
  await missing.page.goto(`${shared.server.url}?view=attention&src=lm`);
  await missing.page.waitForFunction(() => document.querySelector('.model-status')?.dataset.modelState === 'failed', null, { timeout: 60_000 });
  assert.match(await missing.page.textContent('.model-status'), /not served: run scripts\/fetch-model\.sh/);
  assert.deepEqual(missing.problems.filter((p) => !/404|Failed to load resource/.test(p)), []);
  await missing.context.close();
});
