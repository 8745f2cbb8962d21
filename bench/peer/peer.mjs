// The peer of the lab's model worker: transformers.js's browser bundle (its own ONNX Runtime Web,
// wasm backend) running `feature-extraction` with mean pooling and normalisation, as its
// documentation shows for all-MiniLM-L6-v2. Everything comes from the page's own server: the
// bundle and ONNX Runtime's wasm from node_modules/, the model from models/ (no hub is reachable).
//
// URL parameters: dtype = fp32 (onnx/model.onnx) or q8 (onnx/model_quantized.onnx), threads =
// ONNX Runtime's wasm threads (1 or 2; more than 1 works only on a cross-origin-isolated page).
// Exposes window.peer = { ready, embed(text, withEmbedding), ids(text) }: `ready` resolves to
// what ran (versions, isolation, the threads in effect) or rejects with why it could not load.
import { env, pipeline } from './node_modules/@huggingface/transformers/dist/transformers.min.js';

const MODEL_ID = 'all-MiniLM-L6-v2';
const params = new URLSearchParams(location.search);
const dtype = params.get('dtype') ?? 'fp32';
const threads = Number(params.get('threads') ?? 1);
const status = document.getElementById('status');

env.allowRemoteModels = false;
env.allowLocalModels = true;
// A path, not a full URL: 4.3.1 checks which files a model has (whether it has a tokenizer)
// only for a local path; with an http URL and remote models off it finds none and loads the
// pipeline without its tokenizer ("this.tokenizer is not a function").
env.localModelPath = '/models/';
// Each page load reads the files from the server, not from a cache a previous load filled.
env.useBrowserCache = false;
// A folder, not transformers.js's default {mjs, wasm} object of CDN addresses: ONNX Runtime picks
// the build the bundle was made for (ort-wasm-simd-threaded.asyncify.*) in it.
env.backends.onnx.wasm.wasmPaths = new URL('node_modules/onnxruntime-web/dist/', location.href).href;
env.backends.onnx.wasm.numThreads = threads;

let extractor;

async function load() {
  const started = performance.now();
  extractor = await pipeline('feature-extraction', MODEL_ID, { dtype, device: 'wasm' });
  const loadMs = performance.now() - started;
  // ONNX Runtime falls back to one thread without a word (a console warning at most) when the
  // page is not cross-origin isolated, and writes what it used back into its env.
  return {
    version: env.version,
    onnxruntime_web: env.backends.onnx.versions?.web ?? null,
    dtype,
    threads_requested: threads,
    threads_in_effect: env.backends.onnx.wasm.numThreads,
    workers_started: window.__workersStarted,
    crossOriginIsolated: self.crossOriginIsolated,
    load_ms: loadMs,
  };
}

const ready = load();
ready.then(
  (info) => { status.textContent = `ready: ${JSON.stringify(info)}`; status.dataset.state = 'ready'; },
  (error) => { status.textContent = `failed: ${error}`; status.dataset.state = 'failed'; },
);

window.peer = {
  ready,
  /** Tokenizer, forward, mean pooling and normalisation of one text: { ms, embedding? }. */
  async embed(text, withEmbedding = false) {
    const started = performance.now();
    const output = await extractor(text, { pooling: 'mean', normalize: true });
    const ms = performance.now() - started;
    return { ms, embedding: withEmbedding ? Array.from(output.data) : undefined };
  },
  /** The token ids the pipeline's tokenizer gives the text (special tokens included). */
  ids(text) {
    return extractor.tokenizer.encode(text);
  },
};
