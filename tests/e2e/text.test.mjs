// End-to-end: the text view (`src=text`): the real all-MiniLM-L6-v2 in a Web Worker on the
// user's text, in the release build. The model file must be in dist/model/ (scripts/test.sh runs
// scripts/fetch-model.sh before the build). Every test fails on any page error or console error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, serveDist, sharedServerAndBrowser, waitAttentionReady } from './harness.mjs';

const shared = sharedServerAndBrowser();

/** Waits until the model is loaded and `count` tokens of the current text are shown. */
async function waitTokens(page, timeout = 120_000) {
  await page.waitForFunction(() => {
    const state = document.querySelector('.model-status')?.dataset.modelState;
    if (state === 'failed') throw new Error(`model failed: ${document.querySelector('.model-status').textContent}`);
    return state === 'ready' && document.querySelector('[data-text-tokens]');
  }, null, { timeout, polling: 100 });
}

/** Sets the text box's value as a paste does (one input event). */
async function paste(page, text) {
  await page.$eval('textarea[name="text"]', (area, text) => {
    area.value = text;
    area.dispatchEvent(new Event('input', { bubbles: true }));
  }, text);
}

test('text view: the model is fetched with progress, the tokens are the model\'s, every head computed', async () => {
  const { page, problems, context } = await openPage(shared.browser,
    // No model swap (swap.test.mjs tests it): the heads table goes after a swap's jobs.
    `${shared.server.url}?view=attention&src=text&swap=none&layer=2&head=5&text=${encodeURIComponent('The quick brown fox jumps over the lazy dog.')}`);
  const requests = [];
  page.on('request', (r) => requests.push(new URL(r.url()).pathname));
  await waitTokens(page);
  // The same word pieces as Hugging Face tokenizers gives (tests/fixtures/minilm-reference.json).
  const tokens = await page.$$eval('ol.tokens li', (items) => items.map((i) => i.textContent));
  assert.deepEqual(tokens, ['[CLS]', 'the', 'quick', 'brown', 'fox', 'jumps', 'over', 'the', 'lazy', 'dog', '.', '[SEP]']);
  assert.match(await page.textContent('.model-status'), /all-MiniLM-L6-v2 loaded: 22\.\d M parameters, 46\.0 MB/);
  await waitAttentionReady(page);
  const caption = await page.$eval('.attention-table .caption', (e) => e.textContent);
  assert.match(caption, /L = 12 tokens, d = 32, dv = 32/);
  await page.waitForSelector('.heads-table tr.wins', { timeout: 180_000 });
  assert.equal(await page.$$eval('.heads-table details tbody tr', (r) => r.length), 72);

  // A new text: new tokens, L follows, the link carries it.
  await paste(page, 'Random features replace the exponential kernel.');
  await page.waitForFunction(() => document.querySelector('[data-text-tokens]')?.dataset.textTokens === '9');
  await page.waitForFunction(() => /text=Random/.test(location.search));
  await waitAttentionReady(page);
  assert.match(await page.$eval('.attention-table .caption', (e) => e.textContent), /L = 9 tokens/);
  assert.equal(await page.$$eval('.attention-view .error', (e) => e.length), 0);
  assert.deepEqual(problems, []);
  await context.close();
});

test('text view: bad input gets a clear message, never a page error', async () => {
  const { page, problems, context } = await openPage(shared.browser,
    // Broken percent-encoding in the link: read as the literal characters.
    `${shared.server.url}?view=attention&src=text&text=caf%C3%A9%E0%A4%A%zz`);
  await waitTokens(page);
  // Only whitespace and control characters.
  await paste(page, ' \t\n\u0007 ');
  await page.waitForFunction(() => /the text has no words/.test(document.querySelector('.text-input')?.textContent ?? ''));
  // A 10 MB paste is refused at once.
  await paste(page, 'word '.repeat(2_000_000));
  await page.waitForFunction(() => /the lab reads at most 100 KB/.test(document.querySelector('.text-input')?.textContent ?? ''));
  // Beyond 512 tokens: cut, and the page says where.
  await paste(page, 'Attention compares every query with every key. '.repeat(80));
  await page.waitForFunction(() => /the model reads the first 512/.test(document.querySelector('.text-input')?.textContent ?? ''), null, { timeout: 120_000 });
  assert.equal(await page.$eval('[data-text-tokens]', (e) => e.dataset.textTokens), '512');
  assert.deepEqual(problems, []);
  await context.close();
});

test('text view: a missing or damaged model file is named, with how to get it', async () => {
  for (const [body, status, expected] of [
    ['not found', 404, /not served: run scripts\/fetch-model\.sh/],
    ['x'.repeat(1000), 200, /SHA-256 .* expected 83b4d92e/],
  ]) {
    const { page, problems, context } = await openPage(shared.browser, 'about:blank');
    await context.route('**/model/*', (route) => route.fulfill({ status, body }));
    await page.goto(`${shared.server.url}?view=attention&src=text`);
    await page.waitForFunction(() => document.querySelector('.model-status')?.dataset.modelState === 'failed', null, { timeout: 60_000 });
    assert.match(await page.textContent('.model-status'), expected);
    // Failed fetches are the only console errors allowed here (the browser logs the 404).
    assert.deepEqual(problems.filter((p) => !/404|Failed to load resource/.test(p)), []);
    await context.close();
  }
});

test('text view: shared boards (isolated page) and message ports (plain host) give the same heads', async () => {
  // 81 tokens: split over the workers on both paths (ports from 64 tokens, boards from 16).
  const text = Array.from({ length: 68 }, (_, i) => ['random', 'features', 'estimate', 'the', 'softmax', 'kernel'][i % 6]).join(' ');
  const plain = await serveDist(undefined, { isolated: false });
  const tables = {};
  try {
    for (const [name, url] of [['isolated', shared.server.url], ['plain', plain.url]]) {
      const { page, problems, context } = await openPage(shared.browser,
        `${url}?view=attention&src=text&swap=none&layer=3&head=7&text=${encodeURIComponent(text)}`);
      await waitTokens(page);
      assert.ok(Number(await page.$eval('[data-text-tokens]', (e) => e.dataset.textTokens)) >= 64);
      const status = await page.$eval('.model-status', (e) => ({ isolated: e.dataset.isolated, text: e.textContent }));
      assert.equal(status.isolated, name === 'isolated' ? 'true' : 'false', name);
      if (name === 'plain') assert.match(status.text, /does not isolate the page/);
      await waitAttentionReady(page);
      await page.waitForSelector('.heads-table tr.wins', { timeout: 180_000 });
      tables[name] = await page.$eval('.heads-table', (e) => e.textContent);
      assert.deepEqual(problems, [], name);
      await context.close();
    }
  } finally {
    await plain.close();
  }
  // The same heads bit for bit, so the same figures to the last digit shown.
  assert.equal(tables.isolated, tables.plain);
});
