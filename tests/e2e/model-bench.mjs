// Benchmark of the text view (not a test: nothing here fails on timing): the real
// all-MiniLM-L6-v2 in the model worker of the release build, in headless Chromium, against the
// same forward in NumPy + OpenBLAS (f32) on this machine (bench/numpy_minilm.py). Run alone
// (`node tests/e2e/model-bench.mjs`, last line one JSON object) or from bench.mjs (key `model`).
// - model_file_bytes, model_gzip_bytes: the converted model as served (and gzipped, as a server
//   could send it); model_worker_gzip_bytes: the model worker's wasm, gzipped;
// - model_ready_ms: from opening the text view (a fresh context, nothing cached) to the model
//   checked and unpacked (download from localhost, SHA-256, f16 → f32, packing), median;
//   model_load_ms: what is left after the last byte arrived (the fetch's responseEnd): the
//   worker hashes and unpacks the file while it streams in (lab::models::loader), so this is its
//   last chunk's work and any backlog of a worker slower than the download;
// - forward_ms[L] at L = 32, 128, 512: tokenizer + forward + every head's Q, K, V in the worker,
//   median over runs of fresh texts of exactly L tokens, each typed once the attention view has
//   followed the one before (the forward timed alone, as the peer's is); the worker's time is
//   to the text's answer (tokens and embedding; the heads are laid out after it, before the
//   worker takes the attention view's parts); macs_per_s[L] the multiply-adds per
//   second; long_task_max_ms: the page's longest main-thread task meanwhile, the attention view
//   following each text included (0: none over 50 ms), after the view's first render;
// - swap_ms[L] at L = 32, 128: the model swap with the page's defaults (8 methods at 4 budgets,
//   3 draws, the Hedgehog maps' 100 steps, the retrieval set): from the text's answer to the last
//   job's, one run each; swap_first_answer_ms[L] to the first job's answer; swap_jobs its jobs; hedgehog_train_ms[L] the maps' training in it;
//   swap_second_text_ms[128] a second text typed in the same visit, from its answer to its swap's last job
//   (second_text_answer_ms[128]: from the keystroke to its answer; second_text_all_ms[128]: to the last job);
//   swap_kept_maps_ms[128] the same on a later visit (the page reloaded in the same browser
//   context: the Hedgehog maps kept in Cache Storage, checked, not trained again);
//   attention_all_ms[L] (and attention_all_kept_maps_ms[128]) from the text's answer until every
//   part of the attention view is in as well (the two parts that read every head, the page's
//   last sections, go after the swap on the model's workers); swap_long_task_max_ms the page's
//   longest main-thread task from the text's answer until both;
// - numpy_forward_ms[L], ratio[L]: the NumPy reference and worker / NumPy;
// - peer: transformers.js (@huggingface/transformers, pinned in bench/peer/package.json; ONNX
//   Runtime Web, wasm backend) running `feature-extraction` with mean pooling and normalisation on
//   the same weights (bench/peer/make_onnx.py's ONNX files), in the same Chromium, on a page served
//   cross-origin isolated (COOP + COEP), for fp32 and q8 with one and two threads:
//   peer.forward_ms[dtype]['threads' + n][L] the median over the texts the worker was timed on
//   (same texts, same token count, after BENCH_PEER_WARMUP warm-up runs at each L), text by text
//   in turn with the worker (its forward, its page quiet again, then the peer's four
//   configurations on the same text), so that a slower stretch of a shared host weighs on both
//   sides of the ratio; peer.threads_in_effect what ONNX
//   Runtime used (it falls back to one thread silently when the page is not isolated);
//   peer.check the embeddings' agreement with the lab's forward (ids and cosines);
//   ratio_to_peer[L] = forward_ms[L] / the peer's faster fp32 thread count at L, ratio_to_peer_q8
//   the same against q8. When the peer's packages or ONNX files are missing (or BENCH_SKIP_PEER
//   is set) peer is { skipped: why } and the ratios null; a peer that fails gives { error }.
import { gzipSync } from 'node:zlib';
import { access, readFile, stat } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { extname, join, normalize, resolve, sep } from 'node:path';
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

/**
 * Runs the benchmark on an open browser and server; returns the numbers. `peer`, from
 * openPeer(), is timed between the worker's lengths (and reported by peerReport()).
 */
export async function benchModel(browser, server, peer = null) {
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
    // Text 0 warms the worker up; texts 1..runs are timed, each by the lab and then by the peer
    // (round by round, so that a slower stretch of a shared host falls on both, not on one).
    const texts = Array.from({ length: runs + 1 }, (_, i) => textOf(len, seed + i));
    seed += runs + 1;
    for (let i = 0; i < runs + 1; i += 1) {
      // Each answer is numbered (data-answer): wait for the next one.
      const previous = Number(await page.getAttribute('[data-forward-ms]', 'data-answer').catch(() => 0)) || 0;
      const answersBefore = Number(await page.getAttribute('.attention-view', 'data-attention-answers')) || 0;
      await page.$eval('textarea[name="text"]', (area, text) => {
        area.value = text;
        area.dispatchEvent(new Event('input', { bubbles: true }));
      }, texts[i]);
      await page.waitForFunction((previous) => {
        const c = document.querySelector('[data-forward-ms]');
        return c && Number(c.dataset.answer) > previous;
      }, previous, { timeout: 120_000, polling: 20 });
      const tokens = Number(await page.getAttribute('[data-forward-ms]', 'data-text-tokens'));
      if (tokens !== len) throw new Error(`a text of ${len} tokens gave ${tokens}`);
      if (i > 0) samples.push(Number(await page.getAttribute('[data-forward-ms]', 'data-forward-ms')));
      macs[len] = Number(await page.getAttribute('[data-forward-ms]', 'data-multiply-adds'));
      // The attention view follows the text on the same workers: the next text (and the
      // peer's turn) waits until it has, so that each forward is timed alone, not beside the
      // last text's attention parts.
      await page.waitForFunction((before) => {
        const view = document.querySelector('.attention-view');
        return view?.dataset.attentionStatus === 'ready' && Number(view.dataset.attentionAnswers) > before;
      }, answersBefore, { timeout: 120_000, polling: 20 });
      if (peer?.pages) {
        await peerStep(peer, len, () => (i === 0 ? warmPeer(peer, len, texts.slice(1)) : peerRound(peer, texts[i])));
      }
    }
    forward[len] = round(median(samples));
    if (peer?.pages) await peerStep(peer, len, async () => finishPeer(peer, len));
  }
  const longTasks = await page.evaluate(() => window.__longTasks);
  await context.close();
  // BENCH_SKIP_SWAP: the forward alone (a quicker run while working on it).
  const swap = process.env.BENCH_SKIP_SWAP ? { swap_ms: null, page_errors: 0 } : await benchSwap(browser, server);
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

/**
 * The swap of a second text in the same visit (`text` typed once the first text's swap and
 * attention parts are in): from the new text's answer to the last job of its swap. The swap's
 * progress is logged as it changes, so that the end is the new plan's (its count went below
 * its total after the text changed, then reached it).
 */
async function secondText(page, text) {
  await page.evaluate(() => {
    window.__swapLog = [];
    const line = document.querySelector('.swap-answer');
    const log = () => window.__swapLog.push([performance.now(), Number(line.dataset.swapDone), Number(line.dataset.swapTotal)]);
    new MutationObserver(log).observe(line, { attributes: true, attributeFilter: ['data-swap-done', 'data-swap-total'] });
  });
  const previous = Number(await page.getAttribute('[data-forward-ms]', 'data-answer')) || 0;
  const typed = await page.$eval('textarea[name="text"]', (area, text) => {
    area.value = text;
    area.dispatchEvent(new Event('input', { bubbles: true }));
    return performance.now();
  }, text);
  await page.waitForFunction((previous) => Number(document.querySelector('[data-forward-ms]')?.dataset.answer) > previous, previous, { timeout: 120_000, polling: 10 });
  const started = await page.evaluate(() => performance.now());
  const end = await page.waitForFunction(() => {
    const log = window.__swapLog;
    const reset = log.findIndex(([, done, total]) => done < total);
    if (reset < 0) return false;
    const finished = log.slice(reset).find(([, done, total]) => total > 0 && done === total);
    return finished ? finished[0] : false;
  }, null, { timeout: 600_000, polling: 50 });
  const ended = await end.jsonValue();
  return { swap: round(ended - started), answer: round(started - typed), all: round(ended - typed) };
}

/** The model swap with the page's defaults on texts of 32 and 128 tokens (one run each). */
async function benchSwap(browser, server) {
  const swapMs = {};
  const firstAnswerMs = {};
  const trainMs = {};
  let jobs = 0;
  let errors = 0;
  const tasks = [];
  const keptMs = {};
  const allPartsMs = {};
  const keptAllMs = {};
  const secondMs = {};
  const secondAnswerMs = {};
  const secondAllMs = {};
  for (const len of [32, 128]) {
    const { page, context, problems } = await openPage(browser, `${server.url}?view=attention&src=text&text=${encodeURIComponent(textOf(len, 99))}`);
    // A first visit, then (at 128 tokens) a later one: the page reloaded in the same browser
    // context, the Hedgehog maps kept from the first (Cache Storage), not trained again.
    for (const visit of len === 128 ? ['first', 'later'] : ['first']) {
      if (visit === 'later') {
        await new Promise((ok) => setTimeout(ok, 1000));
        await page.reload();
      }
      await page.evaluate(() => {
        window.__longTasks = [];
        new PerformanceObserver((list) => list.getEntries().forEach((e) => window.__longTasks.push(e.duration))).observe({ type: 'longtask', buffered: false });
      });
      await modelReady(page);
      await page.waitForSelector('[data-answer]', { timeout: 120_000 });
      const started = await page.evaluate(() => { window.__longTasks.length = 0; return performance.now(); });
      await page.waitForFunction(() => Number(document.querySelector('.swap-answer')?.dataset.swapDone) > 0, null, { timeout: 600_000, polling: 20 });
      const firstMs = round(await page.evaluate(() => performance.now()) - started);
      await page.waitForFunction(() => {
        const a = document.querySelector('.swap-answer');
        return a && Number(a.dataset.swapTotal) > 0 && a.dataset.swapDone === a.dataset.swapTotal;
      }, null, { timeout: 600_000, polling: 50 });
      const ms = round(await page.evaluate(() => performance.now()) - started);
      await page.waitForFunction(() => document.querySelector('.attention-view')?.dataset.attentionStatus === 'ready', null, { timeout: 600_000, polling: 50 });
      const allMs = round(await page.evaluate(() => performance.now()) - started);
      if (visit === 'later') {
        if (await page.getAttribute('.hedgehog-caption', 'data-train-origin') === 'computed') throw new Error('the later visit trained the Hedgehog maps again');
        keptMs[len] = ms;
        keptAllMs[len] = allMs;
      } else {
        swapMs[len] = ms;
        firstAnswerMs[len] = firstMs;
        allPartsMs[len] = allMs;
        trainMs[len] = Number(await page.getAttribute('.hedgehog-caption', 'data-train-ms'));
      }
      jobs = Number(await page.getAttribute('.swap-answer', 'data-swap-total'));
      tasks.push(...await page.evaluate(() => window.__longTasks));
      if (visit === 'first' && len === 128) {
        const second = await secondText(page, textOf(len, 77));
        secondMs[len] = second.swap;
        secondAnswerMs[len] = second.answer;
        secondAllMs[len] = second.all;
      }
    }
    errors += problems.length;
    await context.close();
  }
  return {
    swap_ms: swapMs,
    swap_first_answer_ms: firstAnswerMs,
    swap_kept_maps_ms: keptMs,
    swap_second_text_ms: secondMs,
    second_text_answer_ms: secondAnswerMs,
    second_text_all_ms: secondAllMs,
    attention_all_ms: allPartsMs,
    attention_all_kept_maps_ms: keptAllMs,
    swap_jobs: jobs,
    hedgehog_train_ms: trainMs,
    swap_long_task_max_ms: round(Math.max(0, ...tasks)),
    page_errors: errors,
  };
}

// The peer (transformers.js): its page and packages in bench/peer/, its model folder and check
// record written by bench/peer/make_onnx.py under target/peer/.
const peerDir = join(root, 'bench', 'peer');
const peerTarget = join(root, 'target', 'peer');
const PEER_MODEL_FILES = ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx', 'onnx/model_quantized.onnx'];
const PEER_CONFIGS = ['fp32', 'q8'].flatMap((dtype) => [1, 2].map((threads) => ({ dtype, threads, key: `threads${threads}` })));
// Its times kept falling for 3–4 runs after loading (and after each new length): warm up more.
const peerWarmup = Math.max(0, Number(process.env.BENCH_PEER_WARMUP ?? 5));
const peerMime = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
};

/** Why the peer cannot run (its packages or ONNX files missing), or null. */
async function peerMissing() {
  if (process.env.BENCH_SKIP_PEER) return 'BENCH_SKIP_PEER is set';
  const pinned = JSON.parse(await readFile(join(peerDir, 'package.json'), 'utf8')).dependencies['@huggingface/transformers'];
  const installed = await readFile(join(peerDir, 'node_modules', '@huggingface', 'transformers', 'package.json'), 'utf8')
    .then((text) => JSON.parse(text).version, () => null);
  if (installed !== pinned) {
    return `@huggingface/transformers ${pinned} is not installed in bench/peer (${installed ? `found ${installed}` : 'none'}): npm ci --ignore-scripts there (scripts/bench.sh does)`;
  }
  for (const file of [...PEER_MODEL_FILES.map((f) => join('models', 'all-MiniLM-L6-v2', f)), 'check.json']) {
    if (!await access(join(peerTarget, file)).then(() => true, () => false)) {
      return `target/peer/${file} is missing: run bench/peer/make_onnx.py (scripts/bench.sh does)`;
    }
  }
  return null;
}

/**
 * Serves the peer's page cross-origin isolated (COOP same-origin, COEP require-corp, CORP on
 * every file), which ONNX Runtime Web needs for more than one thread: bench/peer/ (the page and
 * node_modules/) at /, target/peer/models/ at /models/. Nothing outside those two folders.
 */
async function servePeer() {
  const headers = {
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-embedder-policy': 'require-corp',
    'cross-origin-resource-policy': 'same-origin',
  };
  const server = createServer(async (req, res) => {
    try {
      const path = normalize(decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname));
      const [base, relative] = path.startsWith('/models/')
        ? [join(peerTarget, 'models'), path.slice('/models/'.length)]
        : [peerDir, path === '/' ? 'peer.html' : path.slice(1)];
      const file = resolve(base, relative);
      if (!file.startsWith(base + sep)) throw new Error('outside the served folders');
      const body = await readFile(file);
      res.writeHead(200, { ...headers, 'content-type': peerMime[extname(file)] ?? 'application/octet-stream', 'content-length': body.length });
      res.end(body);
    } catch {
      res.writeHead(404, { ...headers, 'content-type': 'text/plain' });
      res.end('not found');
    }
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => new Promise((ok) => server.close(ok)) };
}

const cosine = (a, b) => {
  let dot = 0; let na = 0; let nb = 0;
  for (let i = 0; i < a.length; i += 1) { dot += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
  return dot / Math.sqrt(na * nb);
};

/**
 * The peer's four pages (fp32 and q8, one and two threads), each loaded in its own context and
 * checked against the lab's forward on make_onnx.py's check texts (the same token ids, the
 * embeddings' cosines). Resolves to { skipped } when the peer is missing, else to the state
 * warmPeer(), peerRound() and finishPeer() fill and peerReport() reads.
 */
export async function openPeer(browser) {
  const missing = await peerMissing();
  if (missing) return { skipped: missing };
  const check = JSON.parse(await readFile(join(peerTarget, 'check.json'), 'utf8'));
  const server = await servePeer();
  const peer = { server, check, pages: [], forward: {}, browserCheck: { ids_equal: true, cosine_min: {} } };
  try {
    for (const config of PEER_CONFIGS) {
      const { page, context, problems } = await openPage(browser, `${server.url}peer.html?dtype=${config.dtype}&threads=${config.threads}`);
      const warnings = [];
      page.on('console', (m) => { if (m.type() === 'warning') warnings.push(m.text()); });
      await page.waitForFunction(() => window.peer, null, { timeout: 60_000 });
      const info = await page.evaluate(() => window.peer.ready);
      for (const item of check.texts) {
        const ids = await page.evaluate((text) => window.peer.ids(text), item.text);
        if (ids.length !== item.ids.length || ids.some((id, i) => id !== item.ids[i])) peer.browserCheck.ids_equal = false;
        const { embedding } = await page.evaluate((text) => window.peer.embed(text, true), item.text);
        const c = cosine(embedding, item.embedding);
        peer.browserCheck.cosine_min[config.dtype] = Math.min(peer.browserCheck.cosine_min[config.dtype] ?? 1, c);
      }
      peer.pages.push({ ...config, page, context, problems, warnings, info });
    }
  } catch (error) {
    await closePeer(peer);
    return { error: `the peer failed: ${error.message.split('\n')[0]}` };
  }
  return peer;
}

/**
 * Runs one step of the peer's timing at `len` (warmPeer, peerRound or finishPeer). A failure
 * ends the peer (peer.error, its pages closed) but not the worker's benchmark.
 */
async function peerStep(peer, len, step) {
  try {
    await step();
  } catch (error) {
    peer.error = `the peer failed at L = ${len}: ${error.message.split('\n')[0]}`;
    console.error(`peer: ${peer.error}`);
    await closePeer(peer);
    peer.pages = null;
  }
}

/** Checks that the peer's tokenizer gives `len` tokens for the timed texts, warms every page
 * up on other texts of that length, and starts the length's samples. */
async function warmPeer(peer, len, texts) {
  for (const { page } of peer.pages) {
    const counts = await page.evaluate((texts) => texts.map((t) => window.peer.ids(t).length), texts);
    if (counts.some((n) => n !== len)) throw new Error(`the peer's tokenizer gave ${counts} tokens for texts of ${len}`);
    for (let i = 0; i < peerWarmup; i += 1) await page.evaluate((text) => window.peer.embed(text), textOf(len, 1000 + i));
  }
  peer.samples = peer.pages.map(() => []);
  peer.round = 0;
}

/** Every configuration of the peer on `text` once, in another order each round, so that no
 * configuration always follows the same one. */
async function peerRound(peer, text) {
  for (let j = 0; j < peer.pages.length; j += 1) {
    const k = (j + peer.round) % peer.pages.length;
    peer.samples[k].push((await peer.pages[k].page.evaluate((text) => window.peer.embed(text), text)).ms);
  }
  peer.round += 1;
}

/** The medians of the length's rounds. */
function finishPeer(peer, len) {
  peer.pages.forEach(({ dtype, key }, k) => {
    peer.forward[dtype] ??= {};
    peer.forward[dtype][key] ??= {};
    peer.forward[dtype][key][len] = round(median(peer.samples[k]));
  });
}

async function closePeer(peer) {
  for (const { context } of peer.pages ?? []) await context.close();
  await peer.server?.close();
}

/** The peer's part of the JSON (`peer`, `ratio_to_peer`, `ratio_to_peer_q8`); closes its pages. */
export async function peerReport(peer, model) {
  if (peer.skipped) return { peer: { skipped: peer.skipped }, ratio_to_peer: null, ratio_to_peer_q8: null };
  if (!peer.pages) return { peer: { error: peer.error }, ratio_to_peer: null, ratio_to_peer_q8: null };
  await closePeer(peer);
  const dtypes = ['fp32', 'q8'];
  const byDtype = (f) => Object.fromEntries(dtypes.map((dtype) => [dtype, Object.fromEntries(
    peer.pages.filter((p) => p.dtype === dtype).map((p) => [p.key, f(p)]))]));
  // The faster thread count at each length: { threads, ms }.
  const best = (dtype, l) => Object.entries(peer.forward[dtype])
    .map(([key, ms]) => ({ threads: Number(key.replace('threads', '')), ms: ms[l] }))
    .sort((a, b) => a.ms - b.ms)[0];
  const perLength = (f) => Object.fromEntries(LENGTHS.map((l) => [l, f(l)]));
  const ratio = (dtype) => perLength((l) => Number((model.forward_ms[l] / best(dtype, l).ms).toFixed(2)));
  return {
    peer: {
      version: peer.pages[0].info.version,
      onnxruntime_web: peer.pages[0].info.onnxruntime_web,
      crossOriginIsolated: peer.pages.every((p) => p.info.crossOriginIsolated),
      forward_ms: peer.forward,
      threads_in_effect: byDtype((p) => p.info.threads_in_effect),
      // ONNX Runtime's threads beyond the first are Web Workers: the page counts those it starts.
      pthread_workers: byDtype((p) => p.info.workers_started),
      best_threads: Object.fromEntries(dtypes.map((d) => [d, perLength((l) => best(d, l).threads)])),
      load_ms: byDtype((p) => round(p.info.load_ms)),
      warmup_runs: peerWarmup,
      check: {
        tokens: peer.check.texts.map((t) => t.ids.length),
        onnxruntime_python: { version: peer.check.onnxruntime, cosine_fp32: peer.check.cosine_fp32, cosine_q8: peer.check.cosine_q8 },
        browser: { ids_equal: peer.browserCheck.ids_equal, cosine_min: peer.browserCheck.cosine_min },
      },
      warnings: [...new Set(peer.pages.flatMap((p) => p.warnings))].slice(0, 5),
      page_errors: peer.pages.reduce((n, p) => n + p.problems.length, 0),
    },
    ratio_to_peer: ratio('fp32'),
    ratio_to_peer_q8: ratio('q8'),
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
  let peer;
  try {
    peer = await openPeer(browser);
    if (peer.skipped || peer.error) console.error(`peer: ${peer.skipped ?? peer.error}`);
    model = await benchModel(browser, server, peer);
    model = { ...model, ...await peerReport(peer, model) };
    if (model.ratio_to_peer) {
      // The comparison in words too (stderr: the last stdout line stays the JSON).
      const p = model.peer;
      for (const l of LENGTHS) {
        console.error(`L = ${l}: lab ${model.forward_ms[l]} ms; transformers.js fp32 ${p.forward_ms.fp32.threads1[l]} ms (1 thread), `
          + `${p.forward_ms.fp32.threads2[l]} ms (2), q8 ${p.forward_ms.q8.threads1[l]} / ${p.forward_ms.q8.threads2[l]} ms; `
          + `lab / peer ${model.ratio_to_peer[l]} (fp32, ${p.best_threads.fp32[l]} thread(s)), ${model.ratio_to_peer_q8[l]} (q8)`);
      }
      console.error(`peer threads in effect: ${JSON.stringify(p.threads_in_effect)}, crossOriginIsolated ${p.crossOriginIsolated}`);
    }
  } finally {
    await browser.close();
    await server.close();
    await peer?.server?.close();
  }
  console.log(JSON.stringify(withReference(model, process.env.BENCH_SKIP_NUMPY ? null : numpyForward())));
}
