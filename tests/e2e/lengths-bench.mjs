// Benchmark (never fails on timing): the length study in headless Chromium, in the page's
// workers (WebAssembly), as a reader runs it: `?view=attention` with the view's default
// methods and m, the study turned on from its control once the view is ready (lmax = LMAX,
// from BENCH_LMAX, 16384 unless given; the control offers 1,024 … 16,384). Waits for the study,
// then prints one JSON object as its last line: the time from the control's change to the
// first point on screen (a chart of the study shown: the same in a build that shows every
// point at the end) and to the whole study (`first_point_s`, `seconds`), the dense kernel's and
// exact attention's rates, every crossover (method, m, D, head size, form, length, model
// length, error and row TV there) and the path of the CSV the page's "Download CSV" gave
// (target/length-study-chromium.csv). BENCH_DIST: another build's folder (say the build
// before a change) instead of dist/; BENCH_ALONE=1: timed one worker at a time.
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveDist, launchBrowser, openPage, distDir, recordLengths } from './harness.mjs';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const lmax = Number(process.env.BENCH_LMAX ?? 16384);
const server = await serveDist(process.env.BENCH_DIST ? resolve(process.env.BENCH_DIST) : distDir);
const browser = await launchBrowser('chromium');
try {
  const { page, problems } = await openPage(browser, `${server.url}?view=attention`, { init: recordLengths });
  await page.waitForSelector('.attention-view[data-attention-status="ready"]', { timeout: 300_000 });
  // BENCH_ALONE=1: the study timed one worker at a time (its control, shown once it is on: set
  // at lmax 1024 first, then the timed lmax chosen).
  if (process.env.BENCH_ALONE === '1') {
    await page.selectOption('select[name="lmax"]', '1024');
    await page.check('input[name="lengths-alone"]');
    await page.waitForFunction(() => document.querySelector('.lengths')?.dataset.lengthsStatus === 'ready', null, { timeout: 300_000 });
  }
  const started = await page.evaluate(() => performance.now());
  await page.selectOption('select[name="lmax"]', String(lmax));
  await page.waitForFunction(() => {
    const section = document.querySelector('.lengths');
    const status = section?.dataset.lengthsStatus;
    if (status === 'error') throw new Error(`length study error: ${section.querySelector('.error')?.textContent}`);
    return status === 'ready';
  }, null, { timeout: 1_800_000, polling: 1000 });
  const log = await page.evaluate(() => window.__lengthsLog);
  const ended = log.findLast((e) => e.status === 'ready');
  // The first chart shown after the study was reset (no point, or none yet in either build).
  const reset = log.findIndex((e) => e.t > started && e.points === 0);
  const firstPoint = reset < 0 ? undefined : log.slice(reset).find((e) => e.charts > 0 && e.status !== 'off');
  const seconds = (ended.t - started) / 1000;
  const first_point_s = firstPoint ? (firstPoint.t - started) / 1000 : null;
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('.lengths .download-csv')]);
  const csvPath = resolve(root, 'target', 'length-study-chromium.csv');
  mkdirSync(resolve(root, 'target'), { recursive: true });
  await download.saveAs(csvPath);
  const rates = await page.$eval('.lengths', (s) => ({
    dense_gmacs: Number(s.dataset.lengthsDenseRate) / 1e9,
    exact_gmacs: Number(s.dataset.lengthsExactRate) / 1e9,
  }));
  const { readFileSync } = await import('node:fs');
  const rows = readFileSync(csvPath, 'utf8').trim().split('\n');
  const header = rows.shift().split(',');
  const column = (name) => header.indexOf(name);
  const crossovers = new Map();
  for (const line of rows) {
    const cells = line.split(',');
    if (cells[column('kernel')] === 'exact' || cells[column('crossover_kind')] === '') continue;
    const key = [cells[column('d')], cells[column('kernel')], cells[column('m')], cells[column('form')]].join(' ');
    const number = (name) => (cells[column(name)] === '' ? null : Number(cells[column(name)]));
    const entry = crossovers.get(key) ?? {
      d: number('d'), method: cells[column('kernel')], m: number('m') ?? 0, features: number('features'),
      form: cells[column('form')], kind: cells[column('crossover_kind')], length: number('crossover_len'),
      model_length: number('model_crossover_len'), output_error: number('crossover_output_error'),
      row_tv: number('crossover_row_tv'),
    };
    crossovers.set(key, entry);
  }
  console.log(JSON.stringify({ lmax, alone: process.env.BENCH_ALONE === '1', first_point_s, seconds, ...rates, problems, csv: csvPath, crossovers: [...crossovers.values()] }));
} finally {
  await browser.close();
  await server.close();
}
