// End-to-end: phones and tablets (issue 32). Every view of the release build at 390 × 844 (a
// phone) and the kernel and attention views at 768 × 1024 (a tablet held upright), in a context
// with a touch screen: the page never scrolls sideways (wide tables and long formulas scroll
// inside their own boxes), the sidebar stacks above the charts, no canvas is wider than the
// viewport and each is drawn at its CSS size (so its text keeps the charts' 10–15 CSS px), no
// control lies outside the viewport or is lower than 24 px, axe-core finds no violation (its
// target-size rule switched on), no page or console error. And the m slider dragged by a finger
// recomputes the page (harness.mjs `touchDrag`: trusted touch input in both browsers), while a
// swipe that starts on it scrolls the page and leaves its value (Chromium: headless Firefox does
// not pan for touch input). About a minute per browser on two cores.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  openPage, waitReady, touchDrag, axeViolations, formatViolations, sharedServerAndBrowser, browserName, waitAttentionReady,
} from './harness.mjs';

// Firefox launched as a touch-screen device (harness.mjs launchBrowser `touch`).
const shared = sharedServerAndBrowser({ touch: true });

// Chromium takes isMobile (meta viewport, overlay scrollbars); Firefox over BiDi ignores it.
const PHONE = { width: 390, height: 844, deviceScaleFactor: 2, hasTouch: true, isMobile: browserName === 'chromium' };
const TABLET = { width: 768, height: 1024, deviceScaleFactor: 1, hasTouch: true, isMobile: browserName === 'chromium' };
const SMALL = 'n=200&datasets=5&pairs=100';

/** What a phone's screen shows wrong: the page's width, canvases, controls, stacking. */
function measureLayout(page) {
  return page.evaluate(() => {
    const doc = document.documentElement;
    const width = doc.clientWidth;
    const dpr = window.devicePixelRatio;
    const shown = (e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
    const name = (e) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''}${e.name ? `[name=${e.name}]` : ''}${e.dataset.chart ? `[${e.dataset.chart}]` : ''}${e.className && typeof e.className === 'string' ? `.${e.className.trim().split(/\s+/).join('.')}` : ''}`;
    // A control inside a box that scrolls sideways (a wide table) is reached by scrolling it.
    const scrolled = (e) => e.closest('.table-scroll, .formula-block, .formula-inline') !== null;
    const canvases = [...document.querySelectorAll('canvas')].filter(shown);
    const wideCanvases = [];
    const blurredCanvases = [];
    let undrawn = 0;
    for (const c of canvases) {
      const box = c.getBoundingClientRect();
      if (box.left < -0.5 || box.right > width + 0.5) wideCanvases.push(`${name(c)} ${Math.round(box.left)}–${Math.round(box.right)}`);
      // Drawn at CSS size × devicePixelRatio (src/charts prepare()), never scaled by CSS. A
      // canvas still at the default 300 × 150 waits for its data (the Hedgehog curve).
      if (c.width === 300 && c.height === 150) undrawn += 1;
      else if (Math.abs(c.width - box.width * dpr) > 2) blurredCanvases.push(`${name(c)} backing ${c.width} for ${box.width.toFixed(1)} CSS px × ${dpr}`);
    }
    const controls = [...document.querySelectorAll('input, select, textarea, button, summary, a.preset, a.download')]
      .filter((e) => shown(e) && e.type !== 'hidden' && !e.closest('.visually-hidden'));
    const outside = [];
    const small = [];
    for (const e of controls) {
      // A checkbox's target is its label (the whole row toggles it).
      const target = (e.type === 'checkbox' || e.type === 'radio') ? (e.closest('label') ?? e) : e;
      const box = target.getBoundingClientRect();
      if (!scrolled(e) && (box.left < -0.5 || box.right > width + 0.5)) outside.push(`${name(e)} ${Math.round(box.left)}–${Math.round(box.right)}`);
      if (box.height < 24 - 0.01) small.push(`${name(e)} ${box.height.toFixed(1)} px high`);
    }
    // The sidebar above the results, in one column.
    const stacked = [...document.querySelectorAll('.layout')].filter(shown).every((layout) => {
      const side = layout.querySelector(':scope > .controls')?.getBoundingClientRect();
      const results = layout.querySelector(':scope > .results')?.getBoundingClientRect();
      return !side || !results || side.bottom <= results.top + 1;
    });
    // plotters measures a chart's text in a span it adds to <body>, in device pixels: a long
    // label at devicePixelRatio 3 must not wrap at the viewport there (style/main.css).
    const span = document.createElement('span');
    span.textContent = 'the MSE formula '.repeat(6);
    span.setAttribute('style', 'display: inline-block; font-family:sans-serif; font-style:normal; font-size: 33px; position: fixed; top: 100%');
    document.body.append(span);
    const textMeasure = span.offsetWidth;
    span.remove();
    return {
      textMeasure,
      scrollWidth: doc.scrollWidth, clientWidth: width, innerWidth: window.innerWidth,
      canvases: canvases.length, undrawn, controls: controls.length,
      wideCanvases, blurredCanvases, outside, small, stacked,
    };
  });
}

/** Asserts that the page, as it stands, is usable at its size; returns the measurement. */
async function assertUsable(page, problems, label, { allowProblem = () => false } = {}) {
  const layout = await measureLayout(page);
  assert.ok(layout.scrollWidth <= layout.clientWidth,
    `${label}: the page scrolls sideways (scrollWidth ${layout.scrollWidth} > ${layout.clientWidth})`);
  assert.deepEqual(layout.wideCanvases, [], `${label}: canvases wider than the viewport`);
  assert.deepEqual(layout.blurredCanvases, [], `${label}: canvases not drawn at their CSS size`);
  assert.deepEqual(layout.outside, [], `${label}: controls outside the viewport`);
  assert.deepEqual(layout.small, [], `${label}: tap targets lower than 24 px`);
  assert.ok(layout.stacked, `${label}: the sidebar is not above the results`);
  assert.ok(layout.textMeasure > layout.clientWidth, `${label}: chart text measured wrapped (${layout.textMeasure} px)`);
  const violations = await axeViolations(page, { rules: { 'target-size': { enabled: true } } });
  assert.equal(violations.length, 0, `${label}: ${violations.length} axe violation(s):\n${formatViolations(violations)}`);
  assert.deepEqual(problems.filter((p) => !allowProblem(p)), [], `${label}: page or console errors`);
  console.log(`# ${label}: scrollWidth ${layout.scrollWidth} of ${layout.clientWidth} (innerWidth ${layout.innerWidth}), ${layout.canvases} canvases (${layout.undrawn} not drawn yet), ${layout.controls} controls`);
  return layout;
}

/** Opens `query` at `size`, waits with `ready`, checks the page; closes it. */
async function checkView(size, query, label, ready, options) {
  const { page, problems, context } = await openPage(shared.browser, shared.server.url + query, size);
  try {
    await ready(page);
    await assertUsable(page, problems, `${label} at ${size.width} × ${size.height}`, options);
  } finally {
    await context.close();
  }
}

const kernelReady = (probe) => async (page) => {
  await waitReady(page);
  // The data panel's code is fetched when the reader scrolls near it (src/ui/below.rs).
  await page.evaluate(() => document.querySelector('.data-panel-placeholder, .data-panel')?.scrollIntoView());
  await page.waitForSelector('.data-panel[data-status="ready"]', { timeout: 60_000 });
  if (probe !== undefined) {
    await page.waitForFunction((i) => document.querySelector('.probe .caption')?.textContent.includes(`pair ${i} of the scatter dataset`), probe, { timeout: 60_000 });
  }
};

test('phone: the kernel view with the probe open and the data panel', () =>
  checkView(PHONE, `?${SMALL}&probe=3`, 'kernel view, probe, data panel', kernelReady(3)));

test('tablet: the kernel view and its data panel', () =>
  checkView(TABLET, `?${SMALL}`, 'kernel view', kernelReady()));

test('phone and tablet: the attention view on synthetic data', async () => {
  await checkView(PHONE, '?view=attention', 'attention view', waitAttentionReady);
  await checkView(TABLET, '?view=attention', 'attention view', waitAttentionReady);
});

test('phone: the attention view on a real head, with every head\'s table', () =>
  checkView(PHONE, '?view=attention&src=minilm&layer=0&head=2', 'real head', async (page) => {
    await waitAttentionReady(page);
    await page.waitForSelector('.heads-table tr.wins', { timeout: 120_000 });
  }));

test('phone: the length study (its smallest lmax) and its wide table', () =>
  checkView(PHONE, '?view=attention&lmax=256&methods=prf-pos,elu&features=16', 'length study', async (page) => {
    await page.waitForFunction(() => {
      const section = document.querySelector('.lengths');
      if (section?.dataset.lengthsStatus === 'error') throw new Error(`length study error: ${section.querySelector('.error')?.textContent}`);
      return section?.dataset.lengthsStatus === 'ready';
    }, null, { timeout: 180_000, polling: 200 });
    await waitAttentionReady(page);
  }));

test('phone: the text view, with the model or saying it is missing', async () => {
  // The model is in dist/model/ after scripts/fetch-model.sh; without it the view says so.
  let failed = false;
  await checkView(PHONE, '?view=attention&src=text', 'text view', async (page) => {
    await page.waitForFunction(() => ['ready', 'failed'].includes(document.querySelector('.model-status')?.dataset.modelState),
      null, { timeout: 120_000, polling: 200 });
    failed = await page.$eval('.model-status', (e) => e.dataset.modelState === 'failed');
    if (!failed) {
      await page.waitForSelector('[data-text-tokens]', { timeout: 60_000 });
      await waitAttentionReady(page);
    }
  }, { allowProblem: (p) => failed && /404|Failed to load resource/.test(p) });
  // And without it, whatever this machine has: the message must fit as well.
  const { page, problems, context } = await openPage(shared.browser, 'about:blank', PHONE);
  try {
    await context.route('**/model/*', (route) => route.fulfill({ status: 404, body: 'not found' }));
    await page.goto(`${shared.server.url}?view=attention&src=text`);
    await page.waitForFunction(() => document.querySelector('.model-status')?.dataset.modelState === 'failed', null, { timeout: 60_000 });
    assert.match(await page.textContent('.model-status'), /not served: run scripts\/fetch-model\.sh/);
    await assertUsable(page, problems, 'text view without the model at 390 × 844',
      { allowProblem: (p) => /404|Failed to load resource/.test(p) });
  } finally {
    await context.close();
  }
});

test('phone: a finger drags the m slider, the page recomputes with the new m and does not scroll', async () => {
  const { page, problems, context } = await openPage(shared.browser, `${shared.server.url}?${SMALL}`, PHONE);
  try {
    await waitReady(page);
    const generation = Number(await page.getAttribute('.app', 'data-generation'));
    const slider = page.locator('.control-row', { has: page.locator('#control-m') }).locator('input[type="range"]');
    await slider.evaluate((e) => e.scrollIntoView({ block: 'center', inline: 'nearest' }));
    const box = await slider.boundingBox();
    const scrolled = await page.evaluate(() => [window.scrollX, window.scrollY]);
    // From the thumb at m = 1024 (a quarter of 16…4096) to two thirds of the track.
    const y = box.y + box.height / 2;
    await touchDrag(page, { x: box.x + box.width * 0.25, y }, { x: box.x + box.width * 0.66, y });
    await page.waitForFunction(() => new URL(location.href).searchParams.get('m') !== '1024', null, { timeout: 10_000 });
    const m = Number(new URL(page.url()).searchParams.get('m'));
    assert.ok(m > 2000 && m < 3500, `m = ${m} after dragging to two thirds of 16…4096`);
    assert.equal(await page.inputValue('#control-m'), String(m), 'the number box follows the slider');
    assert.equal(await slider.inputValue(), String(m));
    // The page recomputed with it.
    await page.waitForFunction((g) => {
      const app = document.querySelector('.app');
      if (app.dataset.status === 'error') throw new Error('app reported data-status="error"');
      return Number(app.dataset.generation) > g && app.dataset.status === 'ready';
    }, generation, { timeout: 60_000, polling: 100 });
    assert.match(await page.textContent('.scatter-grid + .caption'), new RegExp(`m = ${m}\\)`));
    // The finger moved the slider, not the page.
    assert.deepEqual(await page.evaluate(() => [window.scrollX, window.scrollY]), scrolled);

    // A finger that lands on a slider and swipes up scrolls the page and leaves the value as
    // it was (src/ui/controls.rs restores it on pointercancel). Headless Firefox never pans
    // the page for touch input (measured: no scroll for any touch-action), so only Chromium.
    if (browserName === 'chromium') {
      await touchDrag(page, { x: box.x + box.width * 0.25, y }, { x: box.x + box.width * 0.25, y: y - 300 });
      await page.waitForFunction((top) => window.scrollY > top + 100, scrolled[1], { timeout: 10_000 });
      await page.waitForTimeout(300);
      assert.equal(new URL(page.url()).searchParams.get('m'), String(m), 'a swipe that scrolls leaves m');
      assert.equal(await slider.inputValue(), String(m));
      await waitReady(page);
    }
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});
