// End-to-end: the guided tour (src/lab/page/tour, src/ui/tour.rs), start to end, in the browser of
// E2E_BROWSER: every step covers the results until the reader answers, then says which answer
// the results support (the same one the native tests in src/lab/page/tour/tests.rs and tests/tour_model.rs check on the
// step's state) with its numbers; no page error and no axe violation on any step, before or
// after the answer; each step's address, opened afresh, gives the same step, state and numbers;
// presenter mode's keys step through it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, waitReady, sharedServerAndBrowser, axeViolations, formatViolations } from './harness.mjs';

const shared = sharedServerAndBrowser();

/** The answer each step's results support, as the native tests assert on each step's state. */
const EXPECTED = {
  'one-pair': 2,
  'heavy-tails': 1,
  'choosing-a': 2,
  'mean-only-fails': 2,
  'lemma-3-1': 0,
  couplings: 2,
  'beyond-the-paper': 1,
  rows: 0,
  'real-heads': 2,
  embedding: 2,
  'win-it-back': 2,
};
const STEPS = Object.keys(EXPECTED).length;

/** Waits for step `index` (1-based) and returns its id. */
async function onStep(page, index) {
  await page.waitForSelector(`.tour[data-tour-index="${index}"]`, { timeout: 30_000 });
  return page.getAttribute('.tour', 'data-tour-step');
}

/** Answers the step's question with option `choice` and waits for what the lab measured. */
async function answer(page, choice) {
  await page.locator('.tour-option input').nth(choice).check();
  await page.click('.tour-reveal');
  await page.waitForFunction(() => {
    const answer = document.querySelector('.tour-answer');
    const state = answer?.dataset.tourAnswer;
    if (state === 'error') throw new Error(`the step says: ${answer.textContent}`);
    return state !== undefined && state !== 'pending';
  }, null, { timeout: 240_000, polling: 200 });
  return {
    answer: Number(await page.getAttribute('.tour-answer', 'data-tour-answer')),
    correct: await page.getAttribute('.tour-answer', 'data-tour-correct'),
    measured: (await page.textContent('.tour-measured')).trim(),
  };
}

async function assertNoViolations(page, when) {
  const violations = await axeViolations(page);
  assert.equal(violations.length, 0, `${when}:\n${formatViolations(violations)}`);
}

test('the tour runs start to end: predict, then the measured answer; every step a link that reproduces it', async () => {
  const { page, problems, context } = await openPage(shared.browser, `${shared.server.url}?tour=1`);
  for (let index = 1; index <= STEPS; index += 1) {
    const id = await onStep(page, index);
    assert.ok(id in EXPECTED, `step ${index} is ${id}`);
    assert.match(new URL(page.url()).search, new RegExp(`[?&]tour=${index}(&|$)`));
    // Predict before you see: the results are covered until the question is answered.
    assert.equal(await page.getAttribute('.app', 'data-tour-predicting'), '');
    assert.equal(await page.locator('.results').first().evaluate((e) => getComputedStyle(e).visibility), 'hidden');
    // The control to move is marked (the model swap's appear with the model: wait for them).
    await page.waitForSelector('[data-tour-target]', { state: 'attached', timeout: 120_000 });
    await assertNoViolations(page, `${id} before the answer`);
    const choice = (EXPECTED[id] + 1) % 3;
    const seen = await answer(page, choice);
    assert.equal(seen.answer, EXPECTED[id], `${id}: ${seen.measured}`);
    assert.equal(seen.correct, 'false');
    assert.match(seen.measured, /\d/, `${id}: the sentence states measured numbers`);
    assert.equal(await page.getAttribute('.app', 'data-tour-predicting'), null);
    // The step's formula as MathML (fetched with the tour's code, view-formulas.txt), never
    // left as its LaTeX source.
    await page.waitForFunction(() => document.querySelector('.tour .formula-line math')
      && !document.querySelector('.tour .formula-source'), null, { timeout: 30_000 });
    await assertNoViolations(page, `${id} after the answer`);

    // The step's address, opened afresh, is the same step, state and numbers.
    const address = page.url();
    const again = await openPage(shared.browser, address);
    assert.equal(await onStep(again.page, index), id);
    const seenAgain = await answer(again.page, EXPECTED[id]);
    assert.equal(seenAgain.measured, seen.measured, `${id}: the link reproduces the numbers`);
    assert.equal(seenAgain.correct, 'true');
    assert.equal(again.page.url(), address, `${id}: the link is stable`);
    assert.deepEqual(again.problems, []);
    await again.context.close();

    if (index < STEPS) await page.click('.tour-next');
  }
  assert.equal(await page.locator('.tour-next').count(), 0, 'the last step has no next');
  await page.click('.tour-leave');
  await page.waitForSelector('.tour', { state: 'detached' });
  assert.doesNotMatch(new URL(page.url()).search, /tour=/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('the first screen offers the tour; presenter mode enlarges the type and the arrow keys step through it', async () => {
  const { page, problems, context } = await openPage(shared.browser, `${shared.server.url}?n=200&datasets=5&pairs=100`);
  await waitReady(page, 90_000);
  await page.click('.start-tour-link');
  assert.equal(await onStep(page, 1), 'one-pair');
  assert.match(new URL(page.url()).search, /^\?tour=1&/);
  // The step's own state replaced the custom one.
  assert.equal(await page.inputValue('#control-n'), '1000');

  await page.check('.tour-present input');
  await page.waitForFunction(() => getComputedStyle(document.documentElement).fontSize === '20px');
  assert.match(new URL(page.url()).search, /[?&]present=1(&|$)/);
  await page.locator('.tour-title').click();
  await page.keyboard.press('ArrowRight');
  assert.equal(await onStep(page, 2), 'heavy-tails');
  await page.keyboard.press('ArrowRight');
  assert.equal(await onStep(page, 3), 'choosing-a');
  await page.keyboard.press('ArrowLeft');
  assert.equal(await onStep(page, 2), 'heavy-tails');
  // An arrow inside a field moves the field, not the tour.
  await page.focus('#control-m');
  await page.keyboard.press('ArrowRight');
  await page.waitForTimeout(300);
  assert.equal(await page.getAttribute('.tour', 'data-tour-index'), '2');
  assert.deepEqual(problems, []);
  await context.close();

  // Presenter mode off the tour: → starts it.
  const presenting = await openPage(shared.browser, `${shared.server.url}?present=1&n=200&datasets=5&pairs=100`);
  await waitReady(presenting.page, 90_000);
  await presenting.page.locator('h1').click();
  await presenting.page.keyboard.press('ArrowRight');
  assert.equal(await onStep(presenting.page, 1), 'one-pair');
  assert.deepEqual(presenting.problems, []);
  await presenting.context.close();

  // A bad step is refused with a notice, and the page works.
  const bad = await openPage(shared.browser, `${shared.server.url}?tour=99&n=200&datasets=5&pairs=100`);
  await waitReady(bad.page, 90_000);
  assert.match(await bad.page.textContent('.notice'), /tour/);
  assert.equal(await bad.page.locator('.tour').count(), 0);
  assert.deepEqual(bad.problems, []);
  await bad.context.close();
});
