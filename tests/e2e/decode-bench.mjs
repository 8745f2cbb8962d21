// Benchmark of decoding token by token (issue 49, item 2; not a test: nothing here fails on
// timing): after a prompt of C tokens (lm-bench's textOf, one-token words, seed 1; C = 128,
// 1,024 and 8,192, the last prompt 8,192 − steps tokens so that the steps fit the model's
// context), `steps` greedy steps of one token each, timed one by one.
// - lab: examples/forward_wasm.rs's lm_decode, the model in WebAssembly in Node (V8, one
//   thread, relaxed SIMD): exact (every layer softmax with its key/value cache), elu + 1 (D = 64)
//   and prf-pos (m = 256) in all 30 layers run as recurrent networks; prefill_ms, median_ms per
//   step (wall) and median_cpu_ms (the process's CPU time), memory_bytes of one layer at the end.
//   DECODE_LAB_JS names wasm-bindgen's forward_wasm.js (scripts/bench.sh builds it into
//   target/decode-bench/fw/); without it the lab is { skipped }.
// - wllama: tests/e2e/wllama-peer.mjs's runWllamaDecode, the same GGUF in headless Chromium
//   (n_ctx 8,192), 1 and 2 threads: each step one decode() of one token; { skipped } with
//   BENCH_SKIP_PEER or without the pinned package.
// Run alone (`node tests/e2e/decode-bench.mjs`, last stdout line one JSON object { decode }) or
// from ./scripts/bench.sh. DECODE_CONTEXTS (say "128,1024"), DECODE_STEPS (default 32).
// The timings mean little when something else has the host's two cores: loadavg says.
import { execFileSync, spawn } from 'node:child_process';
import { access } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const CONTEXT = 8192;
const contexts = (process.env.DECODE_CONTEXTS ?? '128,1024,8192').split(',').map(Number);
const steps = Number(process.env.DECODE_STEPS ?? 32);
const METHODS = ['exact', 'elu', 'prf-pos'];
// lm-bench.mjs's words and texts: a text of n of them is n tokens (no BOS).
const WORDS = ['the', 'cat', 'sat', 'on', 'a', 'mat', 'and', 'dog', 'ran', 'to', 'house', 'with', 'red', 'blue', 'book', 'tree', 'water', 'light', 'small', 'large'];
const textOf = (tokens, seed) => Array.from({ length: tokens }, (_, i) => WORDS[(i * 7 + seed * 13 + (i * i) % 5) % WORDS.length]).join(' ');
const promptOf = (context) => Math.min(context, CONTEXT - steps);
const load1 = () => Number(loadavg()[0].toFixed(2));

/** In the child (`--lab <forward_wasm.js>`): one JSON line per context and method. */
function labChild(module) {
  const lab = createRequire(import.meta.url)(module);
  const ggufPath = execFileSync(`${root}/scripts/fetch-model.sh`, ['--print-lm-path'], { encoding: 'utf8' }).trim();
  const error = lab.lm_load(readFileSync(ggufPath));
  if (error) throw new Error(error);
  for (const context of contexts) {
    for (const method of METHODS) {
      const before = load1();
      const run = JSON.parse(lab.lm_decode(context, steps, method));
      if (run.error) throw new Error(`${method} at ${context}: ${run.error}`);
      console.log(JSON.stringify({ ...run, memory_bytes: run.memory_bytes[0], loadavg: [before, load1()] }));
    }
  }
}

/** The lab's decoding, in a child Node with relaxed SIMD (V8 in Node 20 needs the flag). */
async function benchLab() {
  const module = process.env.DECODE_LAB_JS;
  if (!module) return { skipped: 'DECODE_LAB_JS is not set (scripts/bench.sh builds examples/forward_wasm.rs and sets it)' };
  try {
    await access(module);
  } catch {
    return { skipped: `${module} is missing` };
  }
  const child = spawn(process.execPath, ['--experimental-wasm-relaxed-simd', fileURLToPath(import.meta.url), '--lab', resolve(module)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk) => { out += chunk; });
  const code = await new Promise((ok) => child.on('close', ok));
  if (code !== 0) return { error: `the lab's child exited with ${code}` };
  const lab = {};
  for (const line of out.split('\n').filter((l) => l.startsWith('{'))) {
    const run = JSON.parse(line);
    (lab[run.method] ??= {})[run.context] = {
      prompt_tokens: run.prompt_tokens,
      prefill_ms: run.prefill_ms,
      prefill_cpu_ms: run.prefill_cpu_ms,
      median_ms: run.median_ms,
      median_cpu_ms: run.median_cpu_ms,
      tokens_per_s: run.tokens_per_s,
      memory_bytes: run.memory_bytes,
      step_ms: run.step_ms,
      tokens: run.tokens,
      loadavg: run.loadavg,
    };
  }
  return lab;
}

async function benchWllama() {
  if (process.env.BENCH_SKIP_PEER) return { skipped: 'BENCH_SKIP_PEER is set' };
  const { runWllamaDecode } = await import(new URL('./wllama-peer.mjs', import.meta.url).href);
  const { launchBrowser } = await import(new URL('./harness.mjs', import.meta.url).href);
  const ggufPath = execFileSync(`${root}/scripts/fetch-model.sh`, ['--print-lm-path'], { encoding: 'utf8' }).trim();
  const prompts = contexts.map((context) => ({ name: String(context), text: textOf(promptOf(context), 1), tokens: promptOf(context) }));
  const browser = await launchBrowser('chromium');
  try {
    const before = load1();
    const peer = await runWllamaDecode({ browser, ggufPath, prompts, steps, nCtx: CONTEXT });
    return { ...peer, loadavg: [before, load1()] };
  } finally {
    await browser.close();
  }
}

const labAt = process.argv.indexOf('--lab');
if (labAt > 0) {
  labChild(process.argv[labAt + 1]);
} else if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const lab = await benchLab();
  let wllama;
  try {
    wllama = await benchWllama();
  } catch (error) {
    wllama = { error: String(error?.message ?? error) };
  }
  // In words on stderr (the last stdout line stays the JSON).
  for (const [method, byContext] of Object.entries(lab)) {
    if (typeof byContext !== 'object') continue;
    for (const [context, r] of Object.entries(byContext)) {
      console.error(`lab ${method} C=${context}: prefill ${r.prefill_ms} ms, ${r.median_ms} ms/token (cpu ${r.median_cpu_ms}), ${r.tokens_per_s} tokens/s, ${r.memory_bytes} bytes/layer`);
    }
  }
  for (const r of wllama.results ?? []) {
    console.error(`wllama C=${r.name}: prefill ${JSON.stringify(r.prefill_ms)} ms, ${JSON.stringify(r.ms)} ms/token`);
  }
  console.log(JSON.stringify({ decode: { steps, contexts, prompt_tokens: contexts.map(promptOf), lab, wllama } }));
}
