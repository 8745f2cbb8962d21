// Benchmark (not a test: nothing here fails on timing). Drives the release build in headless
// Chromium and prints, as its last line, one JSON object:
// - compute_ms: median over BENCH_RUNS (≥ 5) runs, after a warm-up, of the default page's full
//   computation in the workers (data-compute-ms: submit to the last task's answer). Each run
//   uses a new seed, so nothing is reused: every dataset, ω and estimate is computed afresh.
// - cold_load_ms: median over BENCH_RUNS (≥ 5) fresh browser contexts (no HTTP cache, no
//   compiled-code cache) of the time from navigation start to the default page's first full
//   view: data-status="ready", which the app sets once every chart of the result is drawn.
// - update_ms: median time from changing m through the UI (a new m each run) to
//   data-status="ready" with every chart drawn.
// - long_task_max_ms: the longest main-thread task (PerformanceObserver "longtask", which
//   reports tasks over 50 ms; 0 when there were none) during those updates and the drag.
// - drag: m's slider dragged in 40 steps as fast as the pointer moves (a quick thumb):
//   first_frame_ms, the median time from a step to the next newer answer drawn; frames_drawn
//   while the thumb moved; settle_ms from the last step to the page ready on its value.
// - wasm_gzip_bytes: gzipped size of every shipped .wasm (the page's parts and both builds
//   of each worker); wasm_first_view_gzip_bytes: what this browser downloads for the first
//   view (the main part of the page's module and the one kernel-worker build it loads; the
//   attention view's split part is fetched only with that view), from the requests of the
//   cold loads; wasm_attention_gzip_bytes: what it downloads later, when the attention
//   view is first shown (the full-worker build matching the kernel-worker it loaded, which
//   the kernel view also downloads when an estimator needs the optimised A, and the page's
//   attention split part with the chunks it shares with the tour's).
// - numpy_ms, ratio: bench/numpy_experiment.py on the same computation, in the same run.
// - compute_all_ms: the same with every registered estimator chosen (12 instead of 3);
// - attention_ms: the attention view's main part (exact attention, one draw of each of the
//   eight default methods, rows' errors, the 96-token block) at L = 512, d = 32, m = 256, from
//   request to answer in a worker; median over runs with fresh seeds after two warm-ups;
// - sweep: compute_ms against the work n·m·d for several m and d, with ns per multiply-add;
//   sweep_fit: the least-squares line through it (fixed ms, ns per multiply-add, r²).
import { readdir, readFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { join, resolve } from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { serveDist, launchBrowser, openPage, waitReady, distDir, timedDrag, changeAndWait as change } from './harness.mjs';

const runs = Math.max(5, Number(process.env.BENCH_RUNS ?? 5));
const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const k = s.length >> 1; return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2; };
const round = (x) => Number(x.toFixed(1));

/**
 * Drags m's slider in 40 steps from its left end to about its middle (`timedDrag`: each move as
 * fast as the browser takes it, a step every 30-40 ms here, as a quick thumb) and returns:
 * first_frame_ms, the median over steps (the slider's input events) of the time from the step
 * to the next newer answer drawn (data-drawn-generation; the last steps', which wait for the
 * thumb to rest, included); frames_drawn, the answers drawn while the thumb moved; settle_ms,
 * from the last step to the page ready on the last step's value.
 */
async function dragAtThumbPace(page) {
  const { stepTimes, frames, ready } = await timedDrag(page, 'm');
  const last = stepTimes[stepTimes.length - 1];
  const waits = stepTimes.map((t) => (frames.find((f) => f > t) ?? ready) - t);
  return {
    first_frame_ms: round(median(waits)),
    frames_drawn: frames.filter((f) => f <= last).length,
    settle_ms: round(ready - last),
    steps: stepTimes.length,
    drag_ms: round(last - stepTimes[0]),
  };
}

/**
 * The page's work formula (ExperimentConfig::work): projections × d × estimators, the curve's
 * at its largest m (every smaller m sums a prefix of them).
 */
function work({ n = 1000, datasets = 20, pairs = 250, m = 1024, d = 50, estimators = 3 }) {
  const curveLargestM = 8192;
  return ((n + datasets * pairs) * m + Math.min(32, n) * 4 * curveLargestM) * d * estimators;
}

function numpy() {
  try {
    const out = execFileSync('python3', [join(root, 'bench', 'numpy_experiment.py'), '--runs', String(runs)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const lines = out.trim().split('\n');
    return JSON.parse(lines[lines.length - 1]);
  } catch (error) {
    console.error(`numpy benchmark failed: ${error.message}`);
    return null;
  }
}

/**
 * One cold load: a fresh context (nothing cached), from navigation start to data-status="ready"
 * (every chart drawn), measured inside the page (performance.now() counts from navigation
 * start). Returns the time and the .wasm files requested.
 */
async function coldLoad(browser, url) {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  await context.addInitScript(() => {
    window.__readyAt = new Promise((resolve) => {
      const ready = () => document.querySelector('.app')?.dataset.status === 'ready';
      const observer = new MutationObserver(() => {
        if (ready()) { observer.disconnect(); resolve(performance.now()); }
      });
      observer.observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-status'] });
    });
  });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  const wasm = new Set();
  page.on('request', (r) => { if (r.url().endsWith('.wasm')) wasm.add(new URL(r.url()).pathname.slice(1)); });
  await page.goto(url);
  const ms = await page.evaluate(() => window.__readyAt);
  await context.close();
  return { ms, wasm: [...wasm], problems };
}

const gzipBytes = async (file) => gzipSync(await readFile(join(distDir, file)), { level: 9 }).length;

const server = await serveDist();
const browser = await launchBrowser();
let seed = 1000;
let result;
try {
  // cold_load_ms first, on a quiet browser.
  const cold = [];
  const firstViewWasm = new Set();
  let coldProblems = 0;
  for (let i = 0; i < runs; i += 1) {
    const { ms, wasm, problems } = await coldLoad(browser, server.url);
    cold.push(ms);
    wasm.forEach((w) => firstViewWasm.add(w));
    coldProblems += problems.length;
  }
  let firstViewGzipBytes = 0;
  for (const file of firstViewWasm) firstViewGzipBytes += await gzipBytes(file);
  let attentionGzipBytes = 0;
  for (const file of firstViewWasm) {
    const build = file.match(/^kernel-worker(.*)_bg\.wasm$/);
    if (build) attentionGzipBytes += await gzipBytes(`full-worker${build[1]}_bg.wasm`);
  }
  // and the attention view's split part of the page's module, with the chunks it shares with
  // the other split parts (wasm-split-cli's __wasm_split.js names, above each chunk, the split
  // parts that load it).
  for (const file of (await readdir(distDir, { recursive: true }))) {
    const link = file.match(/^(softmax-kernel-lab-[0-9a-f]+)\/__wasm_split\.js$/);
    if (!link) continue;
    const text = await readFile(join(distDir, file), 'utf8');
    const parts = ['split_attention_view.wasm'];
    for (const [, users, chunk] of text.matchAll(/\/\* ([^*]*) \*\/\s*const __(chunk_\d+)/g)) {
      if (users.split(',').map((u) => u.trim()).includes('attention_view')) parts.push(`${chunk}.wasm`);
    }
    for (const part of parts) {
      const path = `${link[1]}/${part}`;
      if (!firstViewWasm.has(path)) attentionGzipBytes += await gzipBytes(path);
    }
  }

  const { page, problems } = await openPage(browser, server.url);
  await waitReady(page, 120_000);
  const workers = await page.evaluate(() => navigator.hardwareConcurrency);

  // compute_ms: a fresh seed each time, after a warm-up of eight runs (WebAssembly starts in
  // V8's baseline compiler and tiers up to the optimising one while it runs: one worker alone
  // needed about three full computations to reach its steady speed, and each of two workers
  // here gets half of each).
  const warmUp = 8;
  const compute = [];
  for (let i = 0; i < warmUp + runs; i += 1) {
    const { computeMs } = await change(page, 'seed', seed++);
    if (i >= warmUp) compute.push(computeMs);
  }

  // update_ms and long tasks: a new m each time (datasets and curves are reused).
  await page.evaluate(() => {
    window.__longTasks = [];
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) window.__longTasks.push(entry.duration);
    }).observe({ type: 'longtask' });
  });
  const update = [];
  const updateCompute = [];
  for (let i = 0; i <= runs; i += 1) {
    const { updateMs, computeMs } = await change(page, 'm', 1024 + 16 * (i + 1));
    if (i > 0) { update.push(updateMs); updateCompute.push(computeMs); }
  }
  // A drag of m (40 steps from 16 to about the middle, a quick thumb), with the long-task
  // observer still on: when each step was made and when each newer answer was drawn.
  const drag = await dragAtThumbPace(page);
  await page.waitForTimeout(100);
  const longTasks = await page.evaluate(() => window.__longTasks);

  // Sweep: time against n·m·d (fresh seed each point).
  const sweep = [];
  for (const d of [25, 50, 100]) {
    await change(page, 'd', d);
    for (const m of [256, 1024, 4096]) {
      await change(page, 'm', m);
      const samples = [];
      for (let i = 0; i < 3; i += 1) samples.push((await change(page, 'seed', seed++)).computeMs);
      const ms = median(samples);
      const w = work({ m, d });
      sweep.push({ d, m, work: w, compute_ms: round(ms), ns_per_madd: Number((ms * 1e6 / w).toFixed(3)) });
    }
  }

  // Least-squares line compute_ms = fixed_ms + slope · work over the sweep: linear growth
  // shows as r² near 1, with the per-run fixed cost (messages, dataset setup) apart.
  const xs = sweep.map((p) => p.work);
  const ys = sweep.map((p) => p.compute_ms);
  const mean = (v) => v.reduce((a, b) => a + b, 0) / v.length;
  const [mx, my] = [mean(xs), mean(ys)];
  const sxy = xs.reduce((a, x, i) => a + (x - mx) * (ys[i] - my), 0);
  const sxx = xs.reduce((a, x) => a + (x - mx) ** 2, 0);
  const slope = sxy / sxx;
  const fixed = my - slope * mx;
  const residual = ys.reduce((a, y, i) => a + (y - fixed - slope * xs[i]) ** 2, 0);
  const total = ys.reduce((a, y) => a + (y - my) ** 2, 0);
  const sweepFit = {
    fixed_ms: round(fixed),
    ns_per_madd: Number((slope * 1e6).toFixed(4)),
    r2: Number((1 - residual / total).toFixed(3)),
  };

  // compute_all_ms: the default page with every registered estimator chosen (a fresh page,
  // fresh seeds, after a warm-up of three runs).
  const every = 'prf-pos,prf-hyp,cexp-mean,cexp-var,hcexp-mean,hcexp-var,hcexp-opt,rff,cplx,hcplx,oprf,oprf-var';
  const all = await openPage(browser, `${server.url}?est=${every}`);
  await waitReady(all.page, 120_000);
  const computeAll = [];
  for (let i = 0; i < 3 + runs; i += 1) {
    const { computeMs } = await change(all.page, 'seed', seed++);
    if (i >= 3) computeAll.push(computeMs);
  }
  await all.context.close();

  // attention_ms (see the header).
  const att = await openPage(browser, `${server.url}?view=attention&len=512&d=32&features=256`);
  const attentionReady = (previous) => att.page.waitForFunction((previous) => {
    const root = document.querySelector('.attention-view');
    return root && Number(root.dataset.attentionAnswers ?? 0) > previous && root.dataset.attentionStatus === 'ready';
  }, previous, { timeout: 180_000, polling: 100 });
  await attentionReady(0);
  const attention = [];
  for (let i = 0; i < 2 + runs; i += 1) {
    const answers = Number(await att.page.getAttribute('.attention-view', 'data-attention-answers'));
    await att.page.fill('#control-seed', String(seed++));
    await att.page.press('#control-seed', 'Enter');
    await attentionReady(answers);
    if (i >= 2) attention.push(Number(await att.page.getAttribute('.attention-view', 'data-attention-ms')));
  }
  await att.context.close();

  const wasmFiles = {};
  let wasmGzipBytes = 0;
  // The page's module is in its own folder (softmax-kernel-lab-HASH/: the main part, the split
  // parts and their shared chunks, scripts/build-page.sh), the workers beside index.html.
  for (const file of (await readdir(distDir, { recursive: true })).filter((f) => f.endsWith('.wasm'))) {
    wasmFiles[file] = await gzipBytes(file);
    wasmGzipBytes += wasmFiles[file];
  }
  const computeMs = median(compute);
  result = {
    compute_ms: round(computeMs),
    cold_load_ms: round(median(cold)),
    compute_all_ms: round(median(computeAll)),
    attention_ms: round(median(attention)),
    attention_samples_ms: attention.map(round),
    update_ms: round(median(update)),
    long_task_max_ms: round(Math.max(0, ...longTasks)),
    drag,
    wasm_gzip_bytes: wasmGzipBytes,
    wasm_first_view_gzip_bytes: firstViewGzipBytes,
    wasm_attention_gzip_bytes: attentionGzipBytes,
    wasm_gzip_files: wasmFiles,
    workers,
    runs,
    compute_samples_ms: compute.map(round),
    cold_load_samples_ms: cold.map(round),
    update_samples_ms: update.map(round),
    update_compute_samples_ms: updateCompute.map(round),
    long_tasks: longTasks.length,
    sweep,
    sweep_fit: sweepFit,
    compute_all_samples_ms: computeAll.map(round),
    page_errors: problems.length + all.problems.length + att.problems.length + coldProblems,
  };
} finally {
  await browser.close();
  await server.close();
}
// NumPy runs after the browser has closed, so that neither disturbs the other.
const reference = process.env.BENCH_SKIP_NUMPY ? null : numpy();
const { compute_ms: computeMs, ...rest } = result;
console.log(JSON.stringify({
  compute_ms: computeMs,
  cold_load_ms: rest.cold_load_ms,
  compute_all_ms: rest.compute_all_ms,
  attention_ms: rest.attention_ms,
  update_ms: rest.update_ms,
  long_task_max_ms: rest.long_task_max_ms,
  wasm_gzip_bytes: rest.wasm_gzip_bytes,
  wasm_first_view_gzip_bytes: rest.wasm_first_view_gzip_bytes,
  wasm_attention_gzip_bytes: rest.wasm_attention_gzip_bytes,
  numpy_ms: reference ? reference.numpy_ms : null,
  ratio: reference ? Number((computeMs / reference.numpy_ms).toFixed(3)) : null,
  ...rest,
}));
