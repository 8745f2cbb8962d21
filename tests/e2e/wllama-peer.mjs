// The language model's benchmark peer: wllama (@wllama/wllama, llama.cpp built to WebAssembly,
// pinned in bench/peer/package.json) on the lab's own SmolLM2-135M-Instruct Q4_1 GGUF, in the same
// headless Chromium, on bench/peer/wllama.html served cross-origin isolated (COOP + COEP, CORP
// on every file), which wllama's multi-thread build needs.
//
// runWllama() returns, for each text: the ids wllama's tokenizer gives it (no BOS), its prompt
// evaluation time (one decode() of all the ids on a cleared KV cache, median of `runs` after
// `warmup`) with each thread count, and the model's top-1 next token after every prefix (with
// the first thread count). { skipped } when the package or the GGUF is missing, { error } on a
// failure. runWllamaDecode() times decoding token by token after a prompt (decode-bench.mjs).
//
// Run alone (`node tests/e2e/wllama-peer.mjs`, last stdout line one JSON object; WLLAMA_RUNS,
// WLLAMA_WARMUP): model-bench.mjs's texts for L = 32, 128 and 512, and the check against
// tests/fixtures/smollm-reference.json (ids, per-token losses, top-1) on a few of its strings.
// The timings mean little when something else has the host's two cores: loadavg_1min says.
import { createReadStream } from 'node:fs';
import { access, readFile, stat } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { createServer } from 'node:http';
import { basename, extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchBrowser, openPage } from './harness.mjs';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const peerDir = join(root, 'bench', 'peer');
const PACKAGE = '@wllama/wllama';
const round = (x) => Number(x.toFixed(1));
const mime = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.gguf': 'application/octet-stream',
};

/** Why the peer cannot run (the pinned wllama not installed, the GGUF missing), or null. */
async function wllamaMissing(ggufPath) {
  const pinned = JSON.parse(await readFile(join(peerDir, 'package.json'), 'utf8')).dependencies?.[PACKAGE];
  const installed = await readFile(join(peerDir, 'node_modules', PACKAGE, 'package.json'), 'utf8')
    .then((text) => JSON.parse(text).version, () => null);
  if (!pinned) return `${PACKAGE} is not in bench/peer/package.json`;
  if (installed !== pinned) {
    return `${PACKAGE} ${pinned} is not installed in bench/peer (${installed ? `found ${installed}` : 'none'}): npm ci --ignore-scripts there`;
  }
  if (!ggufPath || !await access(ggufPath).then(() => true, () => false)) {
    return `the GGUF ${ggufPath ?? '(no path)'} is missing: scripts/fetch-model.sh fetches it`;
  }
  return null;
}

/**
 * Serves bench/peer/ (the page and node_modules/) at / and the GGUF at /models/<its name>,
 * cross-origin isolated; nothing else. Resolves to { url, modelUrl, close }.
 */
async function serveWllama(ggufPath) {
  const headers = {
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-embedder-policy': 'require-corp',
    'cross-origin-resource-policy': 'same-origin',
  };
  const modelPath = `/models/${basename(ggufPath)}`;
  const server = createServer(async (req, res) => {
    try {
      const path = normalize(decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname));
      const file = path === modelPath ? ggufPath : resolve(peerDir, path === '/' ? 'wllama.html' : path.slice(1));
      if (file !== ggufPath && !file.startsWith(peerDir + sep)) throw new Error('outside the served folder');
      const { size } = await stat(file);
      res.writeHead(200, { ...headers, 'content-type': mime[extname(file)] ?? 'application/octet-stream', 'content-length': size });
      // Streamed: the GGUF is 98 MB.
      createReadStream(file).pipe(res);
    } catch {
      res.writeHead(404, { ...headers, 'content-type': 'text/plain' });
      res.end('not found');
    }
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const url = `http://127.0.0.1:${server.address().port}/`;
  return {
    url,
    modelUrl: new URL(modelPath, url).href,
    close: () => new Promise((ok) => { server.closeAllConnections?.(); server.close(ok); }),
  };
}

/**
 * wllama against the float64 reference on `fixtures` ({ name, text, ids, losses, top5? } from
 * tests/fixtures/smollm-reference.json): whether its tokenizer gives the same ids, and, fed the
 * reference's ids, how far its per-token losses are (nats) and how often its top-1 is the
 * reference's.
 */
async function checkFixtures(page, fixtures) {
  const out = [];
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const fixed = (x, digits) => Number(x.toFixed(digits));
  for (const item of fixtures) {
    const ids = await page.evaluate((text) => window.wllamaPeer.tokenize(text), item.text);
    const idsEqual = ids.length === item.ids.length && ids.every((id, i) => id === item.ids[i]);
    const { argmax, losses } = await page.evaluate((ids) => window.wllamaPeer.scan(ids, { losses: true }), item.ids);
    const reference = item.losses ?? [];
    const diffs = reference.map((l, t) => Math.abs(losses[t] - l));
    const top1 = item.top5?.map((candidates) => candidates[0][0]);
    out.push({
      name: item.name,
      tokens: item.ids.length,
      ids_equal: idsEqual,
      ...(idsEqual ? {} : { wllama_ids: ids }),
      loss_abs_diff_max: diffs.length ? fixed(Math.max(...diffs), 4) : null,
      loss_abs_diff_mean: diffs.length ? fixed(mean(diffs), 4) : null,
      perplexity: diffs.length ? { wllama: fixed(Math.exp(mean(losses)), 3), reference: fixed(Math.exp(mean(reference)), 3) } : null,
      top1_agreement: top1 ? fixed(top1.filter((id, t) => id === argmax[t]).length / top1.length, 3) : null,
      losses: losses.map((l) => fixed(l, 4)),
    });
  }
  return out;
}

/**
 * Runs the peer on `texts` ([{ name, text }]) in `browser` (a playwright-core browser); see the
 * head of this file. `config`: more of wllama's LoadModelConfig for every load; `argmax`: false
 * skips the per-position argmax (a timing-only run; argmax stays null); `check`: reference
 * fixtures for checkFixtures(), run with the first thread count (omitted from the result when
 * empty).
 */
export async function runWllama({ browser, ggufPath, texts, threads = [1, 2], warmup = 1, runs = 3, nCtx = 2048, config = {}, argmax = true, check = [] }) {
  const missing = await wllamaMissing(ggufPath);
  if (missing) return { skipped: missing };
  const server = await serveWllama(ggufPath);
  let context;
  try {
    const opened = await openPage(browser, `${server.url}wllama.html`);
    context = opened.context;
    const { page, problems } = opened;
    const warnings = [];
    page.on('console', (m) => { if (m.type() === 'warning') warnings.push(m.text()); });
    await page.waitForFunction(() => window.wllamaPeer, null, { timeout: 60_000 });
    const { version } = await page.evaluate(() => window.wllamaPeer.ready);
    const results = texts.map(({ name }) => ({ name, tokens: null, forward_ms: {}, argmax: null }));
    const infos = {};
    let checked;
    for (const n of threads) {
      const key = `threads${n}`;
      infos[key] = await page.evaluate((options) => window.wllamaPeer.load(options), { url: server.modelUrl, threads: n, nCtx, config });
      for (const [i, { text }] of texts.entries()) {
        const result = results[i];
        result.tokens ??= await page.evaluate((text) => window.wllamaPeer.tokenize(text), text);
        if (result.tokens.length > infos[key].n_ctx) throw new Error(`${result.name}: ${result.tokens.length} tokens, n_ctx ${infos[key].n_ctx}`);
        const timed = await page.evaluate(([ids, options]) => window.wllamaPeer.forward(ids, options), [result.tokens, { warmup, runs }]);
        result.forward_ms[key] = round(timed.ms);
        (result.forward_samples_ms ??= {})[key] = timed.samples.map(round);
        if (argmax && n === threads[0]) {
          const scanned = await page.evaluate((ids) => window.wllamaPeer.scan(ids), result.tokens);
          result.argmax = scanned.argmax;
          result.argmax_ms = round(scanned.ms);
        }
      }
      if (n === threads[0] && check.length) checked = await checkFixtures(page, check);
    }
    await page.evaluate(() => window.wllamaPeer.unload());
    const first = infos[`threads${threads[0]}`];
    const byThreads = (f) => Object.fromEntries(Object.entries(infos).map(([key, info]) => [key, f(info)]));
    return {
      version,
      libllama: first.libllama,
      crossOriginIsolated: first.crossOriginIsolated,
      threads_in_effect: byThreads((info) => info.threads_in_effect),
      multithread_build: byThreads((info) => info.multithread_build),
      // From the GGUF in a Blob to the model ready; fetch_ms the GGUF's fetch from localhost.
      load_ms: byThreads((info) => round(info.load_ms)),
      fetch_ms: byThreads((info) => round(info.fetch_ms)),
      n_ctx: first.n_ctx,
      n_batch: first.n_batch,
      n_ubatch: first.n_ubatch,
      bos: first.bos,
      add_bos_token: first.add_bos_token,
      warmup,
      runs,
      results,
      ...(checked ? { check: checked } : {}),
      warnings: [...new Set(warnings)].slice(0, 5),
      page_errors: problems.slice(0, 5),
    };
  } catch (error) {
    return { error: error.message.split('\n')[0] };
  } finally {
    await context?.close();
    await server.close();
  }
}

/**
 * wllama's decoding token by token (tests/e2e/decode-bench.mjs): for each thread count, the
 * model loaded with a context of `nCtx` tokens, one untimed warm-up (a 16-token prompt, 4
 * steps), then for each prompt of `prompts` ([{ name, text, tokens }], `tokens` the count its
 * text must give) the prompt's prefill and `steps` greedy single-token decodes
 * (wllamaPeer.decodeSteps): { version, threads_in_effect, results: [{ name, tokens,
 * prefill_ms: {threadsN}, step_ms: {threadsN}, ms: {threadsN} (median step) }] }, or
 * { skipped } / { error } as runWllama.
 */
export async function runWllamaDecode({ browser, ggufPath, prompts, steps = 32, threads = [1, 2], nCtx = 8192, config = {} }) {
  const missing = await wllamaMissing(ggufPath);
  if (missing) return { skipped: missing };
  const server = await serveWllama(ggufPath);
  let context;
  try {
    const opened = await openPage(browser, `${server.url}wllama.html`);
    context = opened.context;
    const { page, problems } = opened;
    const warnings = [];
    page.on('console', (m) => { if (m.type() === 'warning') warnings.push(m.text()); });
    await page.waitForFunction(() => window.wllamaPeer, null, { timeout: 60_000 });
    const { version } = await page.evaluate(() => window.wllamaPeer.ready);
    const results = prompts.map(({ name }) => ({ name, tokens: null, prefill_ms: {}, ms: {}, step_ms: {}, generated: {} }));
    const infos = {};
    for (const n of threads) {
      const key = `threads${n}`;
      infos[key] = await page.evaluate((options) => window.wllamaPeer.load(options), { url: server.modelUrl, threads: n, nCtx, config });
      const warm = await page.evaluate((text) => window.wllamaPeer.tokenize(text), prompts[0].text);
      await page.evaluate((ids) => window.wllamaPeer.decodeSteps(ids, { steps: 4 }), warm.slice(0, 16));
      for (const [i, { text, tokens }] of prompts.entries()) {
        const result = results[i];
        const ids = await page.evaluate((text) => window.wllamaPeer.tokenize(text), text);
        if (tokens != null && ids.length !== tokens) throw new Error(`${result.name}: ${ids.length} tokens, not ${tokens}`);
        if (ids.length + steps > infos[key].n_ctx) throw new Error(`${result.name}: ${ids.length} + ${steps} tokens, n_ctx ${infos[key].n_ctx}`);
        result.tokens = ids.length;
        const timed = await page.evaluate(([ids, steps]) => window.wllamaPeer.decodeSteps(ids, { steps }), [ids, steps]);
        result.prefill_ms[key] = round(timed.prefill_ms);
        result.ms[key] = Number(timed.ms.toFixed(2));
        result.step_ms[key] = timed.step_ms.map((x) => Number(x.toFixed(2)));
        result.generated[key] = timed.tokens;
      }
    }
    await page.evaluate(() => window.wllamaPeer.unload());
    const byThreads = (f) => Object.fromEntries(Object.entries(infos).map(([key, info]) => [key, f(info)]));
    const first = infos[`threads${threads[0]}`];
    return {
      version,
      libllama: first.libllama,
      crossOriginIsolated: first.crossOriginIsolated,
      threads_in_effect: byThreads((info) => info.threads_in_effect),
      n_ctx: first.n_ctx,
      n_batch: first.n_batch,
      steps,
      results,
      warnings: [...new Set(warnings)].slice(0, 5),
      page_errors: problems.slice(0, 5),
    };
  } catch (error) {
    return { error: error.message.split('\n')[0] };
  } finally {
    await context?.close();
    await server.close();
  }
}

// model-bench.mjs's texts: textOf(L) is L − 2 words of one token each, L tokens with MiniLM's
// [CLS] and [SEP]; SmolLM2's tokenizer adds nothing, so L − 2 tokens here.
const WORDS = ['the', 'cat', 'sat', 'on', 'a', 'mat', 'and', 'dog', 'ran', 'to', 'house', 'with', 'red', 'blue', 'book', 'tree', 'water', 'light', 'small', 'large'];
const textOf = (tokens, seed) => Array.from({ length: tokens - 2 }, (_, i) => WORDS[(i * 7 + seed * 13 + (i * i) % 5) % WORDS.length]).join(' ');
const LENGTHS = [32, 128, 512];
const CHECKED = ['sentence', 'numbers', 'code', 'paragraph'];

if (import.meta.url === `file://${process.argv[1]}`) {
  const ggufPath = execFileSync('bash', [join(root, 'scripts', 'fetch-model.sh'), '--print-lm-path'], { encoding: 'utf8' }).trim();
  const reference = JSON.parse(await readFile(join(root, 'tests', 'fixtures', 'smollm-reference.json'), 'utf8'));
  const check = reference.strings.filter((s) => CHECKED.includes(s.name));
  const browser = await launchBrowser('chromium');
  // The host's load around the run: the timings mean little if something else had the cores.
  const loadBefore = loadavg()[0];
  let result;
  try {
    result = await runWllama({
      browser,
      ggufPath,
      texts: LENGTHS.map((l) => ({ name: `L${l}`, text: textOf(l, 1) })),
      warmup: Number(process.env.WLLAMA_WARMUP ?? 1),
      runs: Number(process.env.WLLAMA_RUNS ?? 3),
      check,
    });
  } finally {
    await browser.close();
  }
  result.loadavg_1min = { before: Number(loadBefore.toFixed(2)), after: Number(loadavg()[0].toFixed(2)) };
  // The numbers in words too (stderr: the last stdout line stays the JSON).
  if (result.results) {
    for (const r of result.results) {
      console.error(`${r.name}: ${r.tokens.length} tokens; prompt eval ${Object.entries(r.forward_ms).map(([k, ms]) => `${ms} ms (${k})`).join(', ')}`);
    }
    console.error(`wllama ${result.version} (llama.cpp ${result.libllama}), crossOriginIsolated ${result.crossOriginIsolated}, threads ${JSON.stringify(result.threads_in_effect)}, load ${JSON.stringify(result.load_ms)} ms, 1-min load average ${result.loadavg_1min.before} → ${result.loadavg_1min.after}`);
    for (const c of result.check ?? []) {
      console.error(`check ${c.name}: ids ${c.ids_equal ? 'equal' : 'differ'}, |loss − reference| max ${c.loss_abs_diff_max} mean ${c.loss_abs_diff_mean} nats, top-1 agreement ${c.top1_agreement}`);
    }
  } else {
    console.error(`wllama: ${result.skipped ?? result.error}`);
  }
  console.log(JSON.stringify(result));
}
