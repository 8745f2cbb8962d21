// End-to-end accessibility: the keyboard (every control reached by Tab, with a visible ring),
// and axe-core (harness.mjs `axeViolations`) on the default page, a
// preset, the attention view and the single-pair probe of the release build, once each is computed. Every
// test asserts zero violations and no page or console error (the page keeps its
// Content-Security-Policy: axe-core comes in as a script of the page's own origin).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openPage, waitReady, axeViolations, formatViolations, sharedServerAndBrowser } from './harness.mjs';

const shared = sharedServerAndBrowser();

async function assertAccessible(page, problems, label) {
  const violations = await axeViolations(page);
  assert.deepEqual(problems, [], `${label}: page or console errors`);
  assert.equal(violations.length, 0, `${label}: ${violations.length} axe violation(s):\n${formatViolations(violations)}`);
}

test('axe: the default page, once computed', async () => {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url);
  try {
    await waitReady(page, 90_000);
    await assertAccessible(page, problems, 'default page');
  } finally {
    await context.close();
  }
});

test('axe: a preset chosen from the presets row (large norms), with the complex-A controls in use', async () => {
  const { page, problems, context } = await openPage(shared.browser, `${shared.server.url}?est=cexp-var,hcplx&theta=0.7`);
  try {
    await waitReady(page, 90_000);
    await page.click('a.preset[data-preset="large-norms"]');
    await page.waitForSelector('.preset-explanation');
    await waitReady(page, 90_000);
    assert.match(page.url(), /xnorm=50/);
    await assertAccessible(page, problems, 'large-norms preset');
  } finally {
    await context.close();
  }
});

test('axe: the attention view (len=64), once computed', async () => {
  const { page, problems, context } = await openPage(shared.browser, `${shared.server.url}?view=attention&len=64`);
  try {
    await page.waitForSelector('.attention-view[data-attention-status="ready"]', { timeout: 120_000 });
    await assertAccessible(page, problems, 'attention view');
  } finally {
    await context.close();
  }
});

test('axe: the single-pair probe (probe=3), once computed', async () => {
  const { page, problems, context } = await openPage(shared.browser, `${shared.server.url}?probe=3`);
  try {
    await waitReady(page, 90_000);
    await page.waitForFunction(() => [...document.querySelectorAll('.probe .caption')]
      .some((c) => c.textContent.includes('pair 3 of the scatter dataset')), null, { timeout: 60_000 });
    await assertAccessible(page, problems, 'probe');
  } finally {
    await context.close();
  }
});

test('keyboard: Tab reaches every control with a visible focus ring, and a slider moves with the arrow keys', async () => {
  const { page, problems, context } = await openPage(shared.browser, `${shared.server.url}?n=200&datasets=5&pairs=100`);
  try {
    await waitReady(page, 90_000);
    // Every visible, enabled control of the sidebar, the presets and the tabs, numbered.
    const controls = await page.$$eval('.controls input, .controls select, .controls button, .presets a, .tabs button',
      (els) => els.filter((e) => e.getClientRects().length > 0 && !e.disabled)
        .map((e, i) => { e.dataset.kbd = String(i); return `${e.tagName} ${e.name || e.id || e.textContent.trim().slice(0, 30)}`; }));
    const seen = new Set();
    const unringed = [];
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    for (let i = 0; i < 300 && seen.size < controls.length; i++) {
      await page.keyboard.press('Tab');
      const focus = await page.evaluate(() => {
        const e = document.activeElement;
        if (!e?.dataset?.kbd) return null;
        const style = getComputedStyle(e);
        return { index: Number(e.dataset.kbd), ring: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2 };
      });
      if (!focus) continue;
      seen.add(focus.index);
      if (!focus.ring) unringed.push(controls[focus.index]);
    }
    const missed = controls.filter((_, i) => !seen.has(i));
    assert.deepEqual(missed, [], `Tab reached ${seen.size} of ${controls.length} controls`);
    assert.deepEqual(unringed, [], 'controls focused without a visible ring');
    // The m slider, focused by keyboard, steps with the arrow key and recomputes.
    const slider = page.locator('.control-row', { has: page.locator('#control-m') }).locator('input[type="range"]');
    await slider.focus();
    const before = new URL(page.url()).searchParams.get('m');
    await page.keyboard.press('ArrowRight');
    await page.waitForFunction((old) => new URL(location.href).searchParams.get('m') !== old, before);
    await waitReady(page, 90_000);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});
