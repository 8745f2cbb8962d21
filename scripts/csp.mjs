// Run last by scripts/build-page.sh (a Trunk post-build hook): adds a Content-Security-Policy to
// the built index.html that allows only what the app needs: its own origin, WebAssembly
// compilation (the page's module and the split part it fetches later), and the one inline
// module script build-page.sh writes to start the app (allowed by its SHA-256, computed here
// because its text names the hashed folder of each build).
//
// Under `trunk serve` (./scripts/serve.sh) Trunk also injects an inline auto-reload script that
// opens a websocket to the server. Trunk 0.21.14 gives hooks the same variables for `serve` as
// for `build` (TRUNK_PROFILE, TRUNK_HTML_FILE, TRUNK_SOURCE_DIR, TRUNK_STAGING_DIR,
// TRUNK_DIST_DIR, TRUNK_PUBLIC_URL: src/hooks.rs), so the hook recognises the page itself:
// the auto-reload script (it connects to `.well-known/trunk/ws`) is there only when Trunk serves
// with auto-reload. Its text cannot be hashed here: the server rewrites its address into it for
// each response. That page gets the same policy with inline scripts allowed instead of hashed;
// `trunk build` (what CI's end-to-end tests load) keeps the strict one.
import { readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';

const dir = process.env.TRUNK_STAGING_DIR ?? process.argv[2];
if (!dir) {
  console.error('csp.mjs: no TRUNK_STAGING_DIR');
  process.exit(1);
}
const file = join(dir, 'index.html');
let html = readFileSync(file, 'utf8');
const inline = [...html.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)].map((m) => m[1]);
const served = inline.some((text) => text.includes('.well-known/trunk/ws'));
const hashes = inline.map((text) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`);
const scripts = served ? ["'unsafe-inline'"] : hashes;
const policy = [
  "default-src 'self'",
  `script-src 'self' 'wasm-unsafe-eval' ${scripts.join(' ')}`.trim(),
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  // 'self' covers the auto-reload websocket (same host and port) under `trunk serve`.
  "connect-src 'self'",
  // The computation runs in Web Workers loaded from the app's own files.
  "worker-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');
html = html.replace(/<meta http-equiv="Content-Security-Policy"[^>]*>\s*/g, '');
html = html.replace('<meta charset="utf-8" />', `<meta charset="utf-8" />\n    <meta http-equiv="Content-Security-Policy" content="${policy}" />`);
writeFileSync(file, html);
console.log(served
  ? 'csp.mjs: trunk serve page (auto-reload script): policy with inline scripts allowed'
  : `csp.mjs: policy with ${hashes.length} inline script hash(es)`);
