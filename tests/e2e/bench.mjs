// Benchmark (not a test: nothing here fails on timing). Opens the default page of the release
// build, then recomputes it through the UI (the seed control) after a warm-up, and prints one
// JSON line: median compute_ms (the computation alone), median update_ms (control change to
// data-status="ready" with every chart drawn) and wasm_gzip_bytes.
import { readdir, readFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { serveDist, launchBrowser, openPage, waitReady, distDir } from './harness.mjs';

const runs = Number(process.env.BENCH_RUNS ?? 5);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const k = s.length >> 1; return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2; };

const server = await serveDist();
const browser = await launchBrowser();
try {
  const { page, problems } = await openPage(browser, server.url);
  await waitReady(page, 120_000);
  const compute = [];
  const update = [];
  for (let i = 0; i <= runs; i += 1) {
    const seed = String(i % 2 === 0 ? 1 : 0);
    await page.fill('#control-seed', seed);
    const generation = Number(await page.getAttribute('.app', 'data-generation'));
    const started = await page.evaluate(() => performance.now());
    await page.press('#control-seed', 'Enter');
    await page.waitForFunction((g) => {
      const app = document.querySelector('.app');
      return Number(app.dataset.generation) > g && app.dataset.status === 'ready';
    }, generation, { timeout: 120_000, polling: 10 });
    const ended = await page.evaluate(() => performance.now());
    const computeMs = Number(await page.getAttribute('.app', 'data-compute-ms'));
    if (i > 0) { compute.push(computeMs); update.push(ended - started); }
  }
  const wasm = (await readdir(distDir)).find((f) => f.endsWith('.wasm'));
  const wasmGzipBytes = gzipSync(await readFile(join(distDir, wasm)), { level: 9 }).length;
  console.log(JSON.stringify({
    compute_ms: Number(median(compute).toFixed(1)),
    update_ms: Number(median(update).toFixed(1)),
    wasm_gzip_bytes: wasmGzipBytes,
    runs: compute.length,
    compute_samples_ms: compute,
    page_errors: problems.length,
  }));
} finally {
  await browser.close();
  await server.close();
}
