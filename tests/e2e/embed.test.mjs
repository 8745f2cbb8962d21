// End-to-end: figures a course page embeds (`?embed=FIGURE`). A course page made of the
// `<iframe>` snippets of docs/teaching.md (smaller states: n=200&datasets=5&pairs=100, lmax=256)
// is served at /course/ with the built lab at /course/lab/ by a plain static server (course.mjs),
// so the page's files, workers and assets must all be asked by relative URLs. Checked: every
// frame's figure is drawn and fits its frame's width, no frame logs an error, nothing is asked
// outside /course/; each figure alone has no axe-core violation, a control of its own redraws it
// and its link, and "Open in the full lab" opens the full page on the same state; a bad value is
// named inside the frame and never stops it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, openPage, typeInto, axeViolations, formatViolations } from './harness.mjs';
import { serveCourse, snippets, smaller, figureReady, LAB } from './course.mjs';

let served;
let browser;
before(async () => {
  served = await serveCourse({ small: true });
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
  await served?.close();
});

const FIGURES = ['scatter', 'errors', 'mse-vs-m', 'rows', 'lengths'];

/** The charts each figure draws (the first must have ink). */
const CHARTS = {
  scatter: 'canvas[data-chart^="scatter-"]',
  errors: 'canvas[data-chart="mse"], canvas[data-chart="max-rel-err"]',
  'mse-vs-m': 'canvas[data-chart="mse-vs-m"]',
  rows: 'canvas[data-chart^="heatmap-"]',
  lengths: 'canvas[data-chart^="lengths-d"]',
};

/** Records every uncaught error, rejected promise and console.error in each frame. */
function recordInFrames(context) {
  return context.addInitScript(() => {
    window.__problems = [];
    addEventListener('error', (e) => window.__problems.push(`error: ${e.message}`));
    addEventListener('unhandledrejection', (e) => window.__problems.push(`unhandled rejection: ${e.reason}`));
    const error = console.error.bind(console);
    console.error = (...args) => {
      window.__problems.push(`console.error: ${args.join(' ')}`);
      error(...args);
    };
  });
}

/** In `frame`: how many of the figure's drawn charts have ink, and what fits where. */
function measure(frame, figure) {
  return frame.evaluate((selector) => {
    const charts = [...document.querySelectorAll(selector)].filter((c) => c.getBoundingClientRect().width > 0);
    const inked = charts.filter((c) => {
      if (c.width === 0 || c.height === 0) return false;
      const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
      let ink = 0;
      for (let i = 0; i < data.length; i += 16) if (data[i] < 245 || data[i + 1] < 245 || data[i + 2] < 245) ink += 1;
      return ink / (data.length / 16) > 0.01;
    });
    const root = document.documentElement;
    return {
      charts: charts.length,
      inked: inked.length,
      scrollWidth: root.scrollWidth,
      clientWidth: root.clientWidth,
      clientHeight: root.clientHeight,
      scrollHeight: root.scrollHeight,
      chartsBottom: Math.max(...charts.map((c) => c.getBoundingClientRect().bottom)),
      chartsRight: Math.max(...charts.map((c) => c.getBoundingClientRect().right)),
      problems: window.__problems ?? ['no recorder'],
    };
  }, CHARTS[figure]);
}

/** The query of a URL as sorted key=value pairs (what a state is), without `embed`. */
function state(url) {
  const params = [...new URL(url).searchParams].filter(([k]) => k !== 'embed');
  return params.map(([k, v]) => `${k}=${v}`).sort();
}

test('a course page under /course/ with one <iframe> per figure: each is drawn, fits its frame, logs no error', async () => {
  const docs = snippets();
  assert.deepEqual(docs.map((s) => s.figure), FIGURES, 'docs/teaching.md has one snippet per figure, in order');
  for (const s of docs) {
    assert.ok(s.title && s.title.length > 20, `${s.figure}: a title for screen readers`);
    assert.equal(s.loading, 'lazy', `${s.figure}: loading="lazy"`);
    assert.ok(s.src.startsWith('lab/?embed='), `${s.figure}: ${s.src}`);
  }
  // The recorder is installed before the course page loads (a reload would abort the frames'
  // first loads, which Firefox reports as errors of their own).
  const { page, problems, context } = await openPage(browser, 'about:blank', { width: 900, height: 900 });
  await recordInFrames(context);
  await page.goto(served.course);
  try {
    for (const s of docs) {
      const element = page.locator(`iframe[title="${s.title}"]`);
      // loading="lazy": a frame starts when it comes near the viewport.
      await element.scrollIntoViewIfNeeded();
      const frame = await (await element.elementHandle()).contentFrame();
      await frame.waitForSelector(figureReady(s.figure), { timeout: 180_000 });
      // Charts redraw once their size settles.
      await page.waitForTimeout(300);
      const m = await measure(frame, s.figure);
      const where = `${s.figure} in a ${s.width} × ${s.height} frame`;
      assert.ok(m.charts > 0 && m.inked === m.charts, `${where}: ${m.inked} of ${m.charts} charts drawn`);
      assert.ok(m.clientWidth > s.width - 30 && m.clientWidth <= s.width, `${where}: the frame is ${m.clientWidth} px wide inside`);
      assert.ok(m.scrollWidth <= m.clientWidth, `${where}: scrolls sideways (${m.scrollWidth} > ${m.clientWidth})`);
      assert.ok(m.chartsRight <= m.clientWidth + 0.5, `${where}: a chart sticks out (${m.chartsRight})`);
      // The charts are inside the frame's height: nothing to scroll to see the figure.
      assert.ok(m.chartsBottom <= m.clientHeight + 0.5, `${where}: the charts end at ${m.chartsBottom} below ${m.clientHeight}`);
      assert.deepEqual(m.problems, [], where);
      // Its link is the frame's state without `embed`, in the same folder.
      const href = await frame.getAttribute('a.full-lab', 'href');
      const full = new URL(href, frame.url());
      assert.equal(full.pathname, LAB, `${s.figure}: ${full}`);
      assert.equal(full.searchParams.has('embed'), false);
      assert.equal(await frame.getAttribute('a.full-lab', 'target'), '_blank');
      assert.equal(await frame.getAttribute('a.full-lab', 'rel'), 'noopener');
    }
    const outside = served.requests.filter((path) => !path.startsWith('/course/'));
    assert.deepEqual(outside, [], 'every file is asked under /course/');
    assert.ok(served.requests.some((p) => /^\/course\/lab\/kernel-worker.*_loader\.js$/.test(p)), 'the workers load from the sub-path');
    assert.ok(served.requests.includes('/course/lab/assets/minilm-heads.bin'), 'the real heads load from the sub-path');
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
});

/** The full page's controls that show a figure's state. */
async function fullControls(page, figure) {
  if (figure === 'rows' || figure === 'lengths') {
    await page.waitForSelector('.attention-view');
    return page.evaluate(() => ({
      tab: document.querySelector('.tab[aria-selected="true"]')?.dataset.view,
      features: document.querySelector('#control-features')?.value,
      methods: [...document.querySelectorAll('input[data-method]')].filter((b) => b.checked).map((b) => b.dataset.method),
      focus: document.querySelector('select[name="focus"]')?.value,
      src: document.querySelector('select[name="src"]')?.value,
      lmax: document.querySelector('select[name="lmax"]')?.value,
    }));
  }
  await page.waitForSelector('#control-m');
  return page.evaluate(() => ({
    tab: document.querySelector('.tab[aria-selected="true"]')?.dataset.view,
    m: document.querySelector('#control-m')?.value,
    d: document.querySelector('#control-d')?.value,
    n: document.querySelector('#control-n')?.value,
    xnorm: document.querySelector('#control-xnorm')?.value,
    estimators: [...document.querySelectorAll('.estimators input[data-estimator]')].filter((b) => b.checked).map((b) => b.dataset.estimator),
    coupling: document.querySelector('select[name="coupling"]')?.value,
  }));
}

/** The same controls as the embed shows them (only those it has). */
async function embedControls(page, figure) {
  return page.evaluate((figure) => {
    const value = (selector) => document.querySelector(selector)?.value;
    const kernel = !['rows', 'lengths'].includes(figure);
    return kernel
      ? {
        m: value('#control-m'),
        d: value('#control-d'),
        xnorm: value('#control-xnorm'),
        coupling: value('select[name="coupling"]'),
        estimators: [...document.querySelectorAll('.embed-estimators input[data-estimator]')].filter((b) => b.checked).map((b) => b.dataset.estimator),
      }
      : {
        features: value('#control-features'),
        focus: value('select[name="focus"]'),
        src: value('select[name="src"]'),
        lmax: value('select[name="lmax"]'),
      };
  }, figure);
}

for (const figure of FIGURES) {
  test(`embed=${figure} alone: axe 0 violations, and its link opens the full lab on the same state`, async () => {
    const s = snippets().find((x) => x.figure === figure);
    const url = new URL(smaller(s.src), served.course).href;
    const { page, problems, context } = await openPage(browser, url, { width: s.width, height: s.height });
    try {
      await page.waitForSelector(figureReady(figure), { timeout: 180_000 });
      assert.equal(await page.$$eval('header, nav.tabs, aside.controls, .results-table, .presets', (e) => e.length), 0, 'only the figure');
      assert.match(await page.title(), /softmax-kernel-lab/);
      const violations = await axeViolations(page);
      assert.equal(violations.length, 0, formatViolations(violations));
      if (figure === 'scatter') {
        // A control of its own redraws the figure, and the link follows.
        const generation = Number(await page.getAttribute('.app', 'data-generation'));
        await typeInto(page, '#control-m', '128');
        await page.waitForFunction((g) => {
          const app = document.querySelector('.app');
          return Number(app.dataset.generation) > g && app.dataset.status === 'ready';
        }, generation, { timeout: 60_000 });
        assert.match(await page.getAttribute('a.full-lab', 'href'), /[?&]m=128(&|$)/);
        // The estimators' list opens, and a box added computes that estimator's panel.
        await page.click('.embed-estimators summary');
        await page.check('.embed-estimators input[data-estimator="prf-pos"]');
        await page.waitForSelector('canvas[data-chart="scatter-prf-pos"]:visible', { timeout: 60_000 });
        await page.waitForSelector('.app[data-status="ready"]', { timeout: 60_000 });
        assert.match(await page.getAttribute('a.full-lab', 'href'), /[?&]est=[^&]*prf-pos/);
      }
      const shown = await embedControls(page, figure);
      const href = await page.getAttribute('a.full-lab', 'href');
      const fullUrl = new URL(href, page.url()).href;
      assert.deepEqual(state(fullUrl), state(page.url()), 'the link is the page\'s state without embed');
      const full = await openPage(browser, fullUrl, { width: 1280, height: 900 });
      try {
        const controls = await fullControls(full.page, figure);
        assert.equal(controls.tab, ['rows', 'lengths'].includes(figure) ? 'attention' : 'kernel');
        for (const [key, value] of Object.entries(shown)) {
          if (value === undefined || (Array.isArray(value) && value.length === 0)) continue;
          assert.deepEqual(controls[key], value, `${figure}: the full lab's ${key}`);
        }
        // The full page keeps the address it was given (nothing refused, nothing dropped): it
        // writes its state back in the same words.
        await full.page.waitForFunction((search) => location.search === search, new URL(fullUrl).search, { timeout: 10_000 });
        assert.equal(await full.page.$$eval('.notice', (e) => e.length), 0, 'no notice on the full page');
        assert.deepEqual(full.problems, []);
      } finally {
        await full.context.close();
      }
      assert.deepEqual(problems, []);
    } finally {
      await context.close();
    }
  });
}

test('a bad value is named inside the frame; an unknown figure opens the full lab with a notice', async () => {
  const { page, problems, context } = await openPage(browser, `${served.lab}?embed=errors&m=abc&n=200&datasets=5&pairs=100`, { width: 640, height: 480 });
  try {
    await page.waitForSelector('.app.embed[data-status="ready"]', { timeout: 120_000 });
    assert.match(await page.textContent('.embed .notice'), /m: /);
    assert.deepEqual(problems, []);
  } finally {
    await context.close();
  }
  for (const value of ['pie', '', 'Scatter', '%E2%98%83']) {
    const bad = await openPage(browser, `${served.lab}?embed=${value}&n=200&datasets=5&pairs=100`, { width: 640, height: 480 });
    try {
      await bad.page.waitForSelector('.app[data-status="ready"]', { timeout: 120_000 });
      assert.equal(await bad.page.$$eval('.app.embed', (e) => e.length), 0, `embed=${value}: the full lab`);
      assert.match(await bad.page.textContent('.notice'), /embed: the figure is one of scatter, errors, mse-vs-m, rows, lengths/);
      assert.deepEqual(bad.problems, [], `embed=${value}`);
    } finally {
      await bad.context.close();
    }
  }
});
