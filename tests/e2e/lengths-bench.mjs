// Benchmark (never fails on timing): the length study in headless Chromium, in the page's
// workers (WebAssembly), as a reader runs it: `?view=attention&lmax=LMAX` with the view's
// default methods and m (LMAX from BENCH_LMAX, 16384 unless given). Waits for the study, then
// prints one JSON object as its last line: the dense kernel's and exact attention's rates, every
// crossover (method, m, D, head size, form, length, model length, error and row TV there) and
// the path of the CSV the page's "Download CSV" gave (target/length-study-chromium.csv).
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveDist, launchBrowser, openPage } from './harness.mjs';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const lmax = Number(process.env.BENCH_LMAX ?? 16384);
const server = await serveDist();
const browser = await launchBrowser('chromium');
try {
  const { page, problems } = await openPage(browser, `${server.url}?view=attention&lmax=${lmax}`);
  const started = Date.now();
  await page.waitForFunction(() => {
    const section = document.querySelector('.lengths');
    const status = section?.dataset.lengthsStatus;
    if (status === 'error') throw new Error(`length study error: ${section.querySelector('.error')?.textContent}`);
    return status === 'ready';
  }, null, { timeout: 1_800_000, polling: 1000 });
  const seconds = (Date.now() - started) / 1000;
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
  console.log(JSON.stringify({ lmax, seconds, ...rates, problems, csv: csvPath, crossovers: [...crossovers.values()] }));
} finally {
  await browser.close();
  await server.close();
}
