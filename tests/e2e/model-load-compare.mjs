// Benchmark (never fails on timing): the text view's model load in two builds, in one run,
// alternating, in headless Chromium. Usage:
//   node tests/e2e/model-load-compare.mjs BEFORE_DIST AFTER_DIST [rounds] [loads at once]
// Each round, for each build: `loads` fresh browser contexts (1 unless given; 2 is what a page
// with one model worker per core would do) open the attention view at the same moment and
// switch it to the text view; each one's model worker fetches the model from a server of that
// build's folder (localhost) and unpacks it. Per load: ready_ms, from choosing the text view to
// the model ready (the download included: the benchmark's model_ready_ms), and load_ms, the
// worker's time from the last byte to the model ready (`.model-status[data-load-ms]`,
// model_load_ms; see model-bench.mjs's header for what that includes). Prints
// one JSON object: each build's medians, its samples, and after / before.
import { resolve } from 'node:path';
import { serveDist, launchBrowser, openPage } from './harness.mjs';

const [before, after, roundsArg, loadsArg] = process.argv.slice(2);
if (!before || !after) {
  console.error('usage: node tests/e2e/model-load-compare.mjs BEFORE_DIST AFTER_DIST [rounds] [loads at once]');
  process.exit(2);
}
const rounds = Math.max(1, Number(roundsArg ?? 3));
const loads = Math.max(1, Number(loadsArg ?? 1));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const k = s.length >> 1; return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2; };
const round1 = (x) => Number(x.toFixed(1));

/** One load in its own context: opens the text view, waits for the model; its two times. */
async function timeLoad(page) {
  const started = await page.evaluate(() => performance.now());
  await page.selectOption('select[name="src"]', 'text');
  await page.waitForFunction(() => {
    const status = document.querySelector('.model-status');
    if (status?.dataset.modelState === 'failed') throw new Error(status.textContent);
    return status?.dataset.modelState === 'ready';
  }, null, { timeout: 180_000, polling: 20 });
  const ready = await page.evaluate(() => performance.now()) - started;
  const load = Number(await page.getAttribute('.model-status', 'data-load-ms'));
  return { ready, load };
}

const builds = [
  { name: 'before', dir: resolve(before), ready: [], load: [] },
  { name: 'after', dir: resolve(after), ready: [], load: [] },
];
const browser = await launchBrowser('chromium');
try {
  for (let round = 0; round < rounds; round += 1) {
    for (const build of builds) {
      const server = await serveDist(build.dir);
      const opened = await Promise.all(Array.from({ length: loads }, () => openPage(browser, `${server.url}?view=attention&src=synthetic`)));
      await Promise.all(opened.map(({ page }) => page.waitForSelector('select[name="src"]')));
      const times = await Promise.all(opened.map(({ page }) => timeLoad(page)));
      for (const { ready, load } of times) {
        build.ready.push(round1(ready));
        build.load.push(round1(load));
      }
      await Promise.all(opened.map(({ context }) => context.close()));
      await server.close();
    }
  }
} finally {
  await browser.close();
}
const summary = { loads_at_once: loads, rounds };
for (const b of builds) {
  summary[b.name] = {
    model_ready_ms: round1(median(b.ready)),
    model_load_ms: round1(median(b.load)),
    ready_samples: b.ready,
    load_samples: b.load,
  };
}
summary.ratio = {
  ready: Number((summary.after.model_ready_ms / summary.before.model_ready_ms).toFixed(3)),
  load: Number((summary.after.model_load_ms / summary.before.model_load_ms).toFixed(3)),
};
console.log(JSON.stringify(summary));
