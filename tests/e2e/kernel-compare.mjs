// Benchmark (never fails on timing): the default kernel page's compute and update in two
// builds, in one run, alternating, so that a change can be checked for a regression against
// the build before it. Usage: node tests/e2e/kernel-compare.mjs BEFORE_DIST AFTER_DIST [rounds]
// For each round and build: a fresh page, eight warm-up computations (fresh seeds), then
// BENCH_RUNS (≥ 5) computations (compute_ms: submit to the last answer, data-compute-ms) and
// as many changes of m through the UI (update_ms: to every chart drawn). Prints one JSON
// object: each build's medians over all rounds, and after / before.
import { resolve } from 'node:path';
import { serveDist, launchBrowser, openPage, waitReady, changeAndWait } from './harness.mjs';

const [before, after, roundsArg] = process.argv.slice(2);
if (!before || !after) {
  console.error('usage: node tests/e2e/kernel-compare.mjs BEFORE_DIST AFTER_DIST [rounds]');
  process.exit(2);
}
const rounds = Math.max(1, Number(roundsArg ?? 3));
const runs = Math.max(5, Number(process.env.BENCH_RUNS ?? 5));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const k = s.length >> 1; return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2; };

const builds = [
  { name: 'before', dir: resolve(before), compute: [], update: [] },
  { name: 'after', dir: resolve(after), compute: [], update: [] },
];
const browser = await launchBrowser('chromium');
let seed = 1000;
try {
  for (let round = 0; round < rounds; round += 1) {
    for (const build of builds) {
      const server = await serveDist(build.dir);
      const { page } = await openPage(browser, server.url);
      await waitReady(page, 120_000);
      for (let i = 0; i < 8 + runs; i += 1) {
        const { computeMs } = await changeAndWait(page, 'seed', seed++);
        if (i >= 8) build.compute.push(computeMs);
      }
      for (let i = 0; i <= runs; i += 1) {
        const { updateMs } = await changeAndWait(page, 'm', 1024 + 16 * (i + 1));
        if (i > 0) build.update.push(updateMs);
      }
      await page.close();
      await server.close();
    }
  }
} finally {
  await browser.close();
}
const summary = Object.fromEntries(builds.map((b) => [b.name, {
  compute_ms: Number(median(b.compute).toFixed(1)),
  update_ms: Number(median(b.update).toFixed(1)),
  samples: b.compute.length,
}]));
summary.ratio = {
  compute: Number((summary.after.compute_ms / summary.before.compute_ms).toFixed(3)),
  update: Number((summary.after.update_ms / summary.before.update_ms).toFixed(3)),
};
console.log(JSON.stringify(summary));
