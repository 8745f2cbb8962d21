// Benchmark of the text view (not a test: nothing here fails on timing): the real
// all-MiniLM-L6-v2 in the model worker of the release build, in headless Chromium, against the
// same forward in NumPy + OpenBLAS (f32) on this machine (bench/numpy_minilm.py). Run alone
// (`node tests/e2e/model-bench.mjs`, last line one JSON object) or from bench.mjs (key `model`).
// - model_file_bytes, model_gzip_bytes: the converted model as served (and gzipped, as a server
//   could send it); model_worker_gzip_bytes: the model worker's wasm, gzipped;
// - model_ready_ms: from opening the text view (a fresh context, nothing cached) to the model
//   checked and unpacked (download from localhost, SHA-256, f16 → f32, packing), median;
//   model_load_ms: the worker's own part of it (SHA-256 and unpacking);
// - forward_ms[L] at L = 32, 128, 512: tokenizer + forward + every head's Q, K, V in the worker,
//   median over runs of fresh texts of exactly L tokens; macs_per_s[L] the multiply-adds per
//   second; long_task_max_ms: the page's longest main-thread task meanwhile, the attention view
//   following each text included (0: none over 50 ms), after the view's first render;
// - swap_ms[L] at L = 32, 128: the model swap with the page's defaults (8 methods at 4 budgets,
//   3 draws, the Hedgehog maps' 200 steps, the retrieval set): from the text's answer to the last
//   job's, one run each; swap_jobs its jobs; hedgehog_train_ms[L] the maps' training in it;
//   swap_long_task_max_ms the page's longest main-thread task while the answers arrive (after
//   the attention view's first render);
// - numpy_forward_ms[L], ratio[L]: the NumPy reference and worker / NumPy.
import { gzipSync } from 'node:zlib';
import { readFile, stat } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveDist, launchBrowser, openPage, distDir } from './harness.mjs';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const runs = Math.max(5, Number(process.env.BENCH_RUNS ?? 5));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const k = s.length >> 1; return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2; };
const round = (x) => Number(x.toFixed(1));
const LENGTHS = [32, 128, 512];
// Words that are one token each in the model's vocabulary: a text of n of them is n + 2 tokens.
const WORDS = ['the', 'cat', 'sat', 'on', 'a', 'mat', 'and', 'dog', 'ran', 'to', 'house', 'with', 'red', 'blue', 'book', 'tree', 'water', 'light', 'small', 'large'];
const textOf = (tokens, seed) => Array.from({ length: tokens - 2 }, (_, i) => WORDS[(i * 7 + seed * 13 + (i * i) % 5) % WORDS.length]).join(' ');

async function modelReady(page, timeout = 180_000) {
  await page.waitForFunction(() => {
    const status = document.querySelector('.model-status');
    if (status?.dataset.modelState === 'failed') throw new Error(status.textContent);
    return status?.dataset.modelState === 'ready';
  }, null, { timeout, polling: 50 });
}

/** Runs the benchmark on an open browser and server; returns the numbers. */
export async function benchModel(browser, server) {
  const ready = [];
  const load = [];
  for (let i = 0; i < Math.min(runs, 3); i += 1) {
    const { page, context } = await openPage(browser, `${server.url}?view=attention&src=synthetic`);
    await page.waitForSelector('select[name="src"]');
    const started = await page.evaluate(() => performance.now());
    await page.selectOption('select[name="src"]', 'text');
    await modelReady(page);
    ready.push(await page.evaluate(() => performance.now()) - started);
    load.push(Number(await page.getAttribute('.model-status', 'data-load-ms')));
    await context.close();
  }
  const { page, context, problems } = await openPage(browser, `${server.url}?view=attention&src=text&methods=prf-pos&swap=none`);
  await page.evaluate(() => {
    window.__longTasks = [];
    new PerformanceObserver((list) => list.getEntries().forEach((e) => window.__longTasks.push(e.duration))).observe({ type: 'longtask', buffered: false });
  });
  await modelReady(page);
  // The default text's answer first, so that the next answer is the first text's.
  await page.waitForSelector('[data-answer]', { timeout: 120_000 });
  // Long tasks from here on: while texts are typed and run (the view's first render, once, is
  // not counted: it is the attention view's, the same for every data source).
  await page.waitForFunction(() => document.querySelector('.attention-view')?.dataset.attentionStatus === 'ready', null, { timeout: 120_000 });
  await page.evaluate(() => { window.__longTasks.length = 0; });
  const forward = {};
  const macs = {};
  let seed = 1;
  for (const len of LENGTHS) {
    const samples = [];
    for (let i = 0; i < runs + 1; i += 1) {
      const text = textOf(len, seed++);
      // Each answer is numbered (data-answer): wait for the next one.
      const previous = Number(await page.getAttribute('[data-forward-ms]', 'data-answer').catch(() => 0)) || 0;
      await page.$eval('textarea[name="text"]', (area, text) => {
        area.value = text;
        area.dispatchEvent(new Event('input', { bubbles: true }));
      }, text);
      await page.waitForFunction((previous) => {
        const c = document.querySelector('[data-forward-ms]');
        return c && Number(c.dataset.answer) > previous;
      }, previous, { timeout: 120_000, polling: 20 });
      const tokens = Number(await page.getAttribute('[data-forward-ms]', 'data-text-tokens'));
      if (tokens !== len) throw new Error(`a text of ${len} tokens gave ${tokens}`);
      if (i > 0) samples.push(Number(await page.getAttribute('[data-forward-ms]', 'data-forward-ms')));
      macs[len] = Number(await page.getAttribute('[data-forward-ms]', 'data-multiply-adds'));
    }
    forward[len] = round(median(samples));
  }
  const longTasks = await page.evaluate(() => window.__longTasks);
  await context.close();
  const swap = await benchSwap(browser, server);
  const modelFile = join(distDir, 'model', 'minilm-l6-v2-f16.safetensors');
  const workerWasm = join(distDir, 'model-worker_bg.wasm');
  return {
    model_file_bytes: (await stat(modelFile)).size,
    model_gzip_bytes: gzipSync(await readFile(modelFile), { level: 6 }).length,
    model_worker_gzip_bytes: gzipSync(await readFile(workerWasm), { level: 9 }).length,
    model_ready_ms: round(median(ready)),
    model_load_ms: round(median(load)),
    forward_ms: forward,
    multiply_adds: macs,
    macs_per_s: Object.fromEntries(LENGTHS.map((l) => [l, Number((macs[l] / (forward[l] / 1e3)).toExponential(3))])),
    long_task_max_ms: round(Math.max(0, ...longTasks)),
    ...swap,
    page_errors: problems.length + swap.page_errors,
  };
}

/** The model swap with the page's defaults on texts of 32 and 128 tokens (one run each). */
async function benchSwap(browser, server) {
  const swapMs = {};
  const trainMs = {};
  let jobs = 0;
  let errors = 0;
  const tasks = [];
  for (const len of [32, 128]) {
    const { page, context, problems } = await openPage(browser, `${server.url}?view=attention&src=text&text=${encodeURIComponent(textOf(len, 99))}`);
    await page.evaluate(() => {
      window.__longTasks = [];
      new PerformanceObserver((list) => list.getEntries().forEach((e) => window.__longTasks.push(e.duration))).observe({ type: 'longtask', buffered: false });
    });
    await modelReady(page);
    await page.waitForSelector('[data-answer]', { timeout: 120_000 });
    const started = await page.evaluate(() => performance.now());
    // The attention view's first render (the same for every data source) is not the swap's.
    await page.waitForFunction(() => document.querySelector('.attention-view')?.dataset.attentionStatus === 'ready', null, { timeout: 120_000 });
    await page.evaluate(() => { window.__longTasks.length = 0; });
    await page.waitForFunction(() => {
      const a = document.querySelector('.swap-answer');
      return a && Number(a.dataset.swapTotal) > 0 && a.dataset.swapDone === a.dataset.swapTotal;
    }, null, { timeout: 600_000, polling: 50 });
    swapMs[len] = round(await page.evaluate(() => performance.now()) - started);
    trainMs[len] = Number(await page.getAttribute('.hedgehog-caption', 'data-train-ms'));
    jobs = Number(await page.getAttribute('.swap-answer', 'data-swap-total'));
    tasks.push(...await page.evaluate(() => window.__longTasks));
    errors += problems.length;
    await context.close();
  }
  return {
    swap_ms: swapMs,
    swap_jobs: jobs,
    hedgehog_train_ms: trainMs,
    swap_long_task_max_ms: round(Math.max(0, ...tasks)),
    page_errors: errors,
  };
}

/** bench/numpy_minilm.py on the same machine (null when NumPy is missing). */
export function numpyForward() {
  try {
    const out = execFileSync('python3', [join(root, 'bench', 'numpy_minilm.py'), '--runs', String(runs)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const lines = out.trim().split('\n');
    return JSON.parse(lines[lines.length - 1]);
  } catch (error) {
    console.error(`numpy forward benchmark failed: ${error.message}`);
    return null;
  }
}

/** The worker's numbers with the NumPy reference and the ratios. */
export function withReference(model, reference) {
  const numpy = reference ? reference.forward_ms : null;
  return {
    ...model,
    numpy_forward_ms: numpy,
    numpy_threads: reference ? reference.threads : null,
    ratio: numpy ? Object.fromEntries(LENGTHS.map((l) => [l, Number((model.forward_ms[l] / numpy[String(l)]).toFixed(2))])) : null,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const server = await serveDist();
  const browser = await launchBrowser();
  let model;
  try {
    model = await benchModel(browser, server);
  } finally {
    await browser.close();
    await server.close();
  }
  console.log(JSON.stringify(withReference(model, process.env.BENCH_SKIP_NUMPY ? null : numpyForward())));
}
