// The language model's peer: wllama (@wllama/wllama, llama.cpp built to WebAssembly, pinned in
// package.json) running SmolLM2-135M-Instruct from the lab's own Q4_1 GGUF. Everything comes from
// the page's own server: wllama's ESM build and its two wasm builds from node_modules/, the GGUF
// from the URL the caller gives (tests/e2e/wllama-peer.mjs serves it at /models/).
//
// 2.x, not 3.x: wllama 3 drives llama-server's completion loop and dropped tokenize, decode and
// getLogits (its guides/intro-v3.md, "Removed low-level APIs"), which are what a prompt-eval
// timing and a per-position argmax need.
//
// Exposes window.wllamaPeer = { ready, load, tokenize, forward, scan, decodeSteps, unload }; one
// model at a time, so that an idle instance's threads never compete with the one being timed.
import { Wllama } from './node_modules/@wllama/wllama/esm/index.js';

const status = document.getElementById('status');
const asset = (path) => new URL(`node_modules/@wllama/wllama/${path}`, location.href).href;
// wllama picks the multi-thread build only when n_threads > 1 and the page can share memory
// (cross-origin isolated); n_threads = 1 always runs the single-thread build.
const WASM_PATHS = {
  'single-thread/wllama.wasm': asset('esm/single-thread/wllama.wasm'),
  'multi-thread/wllama.wasm': asset('esm/multi-thread/wllama.wasm'),
};
// llama.cpp's own log and wllama's debug lines go nowhere; its warnings (say, a fallback to one
// thread) reach the console, where the caller collects them.
const logger = { debug() {}, log() {}, warn: console.warn.bind(console), error: console.error.bind(console) };

let wllama = null;
const now = () => performance.now();
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const k = s.length >> 1; return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2; };

async function unload() {
  if (wllama) await wllama.exit();
  wllama = null;
}

/**
 * Loads the GGUF at `url` with `threads` llama.cpp threads and a context of `nCtx` tokens (a
 * previous model is unloaded first). fetch_ms: the GGUF from the server into a Blob; load_ms:
 * from there to the model ready (the wasm compiled, the file copied into the worker, llama.cpp's
 * load and context); both in ms. `config`: more of wllama's LoadModelConfig (say, cache_type_k).
 */
async function load({ url, threads = 1, nCtx = 2048, config = {} }) {
  await unload();
  const started = now();
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  const blob = await response.blob();
  const fetched = now();
  wllama = new Wllama(WASM_PATHS, { logger });
  await wllama.loadModel([blob], { ...config, n_threads: threads, n_ctx: nCtx });
  const loaded = now();
  const info = wllama.getLoadedContextInfo();
  return {
    version: window.wllamaVersion,
    libllama: Wllama.getLibllamaVersion(),
    crossOriginIsolated: self.crossOriginIsolated,
    threads_requested: threads,
    threads_in_effect: wllama.getNumThreads(),
    multithread_build: wllama.isMultithread(),
    n_ctx: info.n_ctx,
    n_batch: info.n_batch,
    n_ubatch: info.n_ubatch,
    n_vocab: info.n_vocab,
    bos: wllama.getBOS(),
    // What the GGUF asks a tokenizer to do; tokenize() below never adds BOS either way.
    add_bos_token: wllama.mustAddBosToken(),
    gguf_bytes: blob.size,
    fetch_ms: fetched - started,
    load_ms: loaded - fetched,
  };
}

function loaded() {
  if (!wllama) throw new Error('no model loaded: call wllamaPeer.load first');
  return wllama;
}

/**
 * The text's token ids. wllama's tokenize() calls llama.cpp's tokenizer with add_special =
 * false (no BOS, whatever the GGUF says); `special` parses special-token text such as
 * <|im_start|> as the special token, as the lab's tokenizer does.
 */
function tokenize(text, special = true) {
  return loaded().tokenize(text, special);
}

/**
 * Prompt evaluation of `ids`: one decode() of all of them (llama.cpp's batched forward, logits
 * for the last position only, as wllama computes them), the KV cache cleared before each, timed
 * from the call to its answer. `warmup` untimed runs, then `runs` timed: { ms (median), samples }.
 */
async function forward(ids, { warmup = 1, runs = 3 } = {}) {
  const model = loaded();
  const samples = [];
  for (let i = 0; i < warmup + runs; i += 1) {
    await model.kvClear();
    const started = now();
    await model.decode(ids, {});
    const ms = now() - started;
    if (i >= warmup) samples.push(ms);
  }
  await model.kvClear();
  return { ms: median(samples), samples };
}

/**
 * The model's top-1 next token after each prefix of `ids` (argmax[t] predicts ids[t + 1]).
 * wllama's decode() keeps only the last position's logits, so this decodes one token at a time
 * on the KV cache and reads the logits after each (not a timing). With `losses`, getLogits(-1)
 * returns the whole softmax (slow: sorted, 49,152 entries a position) and losses[t] = −ln p(ids[t
 * + 1]) in nats, the reference fixture's per-token loss.
 */
async function scan(ids, { losses = false } = {}) {
  const model = loaded();
  const started = now();
  const argmax = [];
  const out = [];
  await model.kvClear();
  for (let t = 0; t < ids.length; t += 1) {
    await model.decode([ids[t]], {});
    const probs = await model.getLogits(losses ? -1 : 1);
    argmax.push(probs[0].token);
    if (losses && t + 1 < ids.length) {
      const next = probs.find((c) => c.token === ids[t + 1]);
      out.push(next ? -Math.log(next.p) : null);
    }
  }
  await model.kvClear();
  return { argmax, losses: losses ? out : undefined, ms: now() - started };
}

/**
 * Decoding token by token after a prompt: `ids` read in one decode() on a cleared KV cache
 * (prefill_ms, llama.cpp's batched prompt evaluation in n_batch pieces), then `steps` greedy
 * steps, each one decode() of the single token the last logits' top-1 names (getLogits(1),
 * outside the step's time). A step's time is wllama's decode() call from the page: llama.cpp's
 * forward of one token (its logits included) plus the round trip to wllama's worker.
 */
async function decodeSteps(ids, { steps = 32 } = {}) {
  const model = loaded();
  await model.kvClear();
  const started = now();
  await model.decode(ids, {});
  const prefill = now() - started;
  const stepMs = [];
  const tokens = [];
  for (let i = 0; i < steps; i += 1) {
    const [{ token }] = await model.getLogits(1);
    tokens.push(token);
    const t0 = now();
    await model.decode([token], {});
    stepMs.push(now() - t0);
  }
  await model.kvClear();
  return { prefill_ms: prefill, step_ms: stepMs, ms: median(stepMs), tokens };
}

const ready = fetch(asset('package.json'))
  .then((r) => r.json())
  .then((pkg) => { window.wllamaVersion = pkg.version; return { version: pkg.version, crossOriginIsolated: self.crossOriginIsolated }; });
ready.then(
  (info) => { status.textContent = `ready: ${JSON.stringify(info)}`; status.dataset.state = 'ready'; },
  (error) => { status.textContent = `failed: ${error}`; status.dataset.state = 'failed'; },
);

window.wllamaPeer = { ready, load, tokenize, forward, scan, decodeSteps, unload };
