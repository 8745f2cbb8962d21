// Benchmark of the language model's view (not a test: nothing here fails on timing):
// SmolLM2-135M-Instruct in the lab's worker, release build, headless Chromium, against wllama
// (llama.cpp in WebAssembly, tests/e2e/wllama-peer.mjs) on the same GGUF in the same browser.
// Run alone (`node tests/e2e/lm-bench.mjs`; last line one JSON object) or from ./scripts/bench.sh.
// - lab.ready_ms: from opening view=lm in a fresh context (nothing cached) to the model checked
//   and read, median of 3; lab.load_ms what is left after the file's last byte (the worker hashes
//   the file as it arrives);
// - lab.forward_ms[L] at L = 32, 128, 512 tokens: the exact forward of a text of L tokens
//   (every layer and the head over every position: each token's loss and its 5 likeliest next
//   tokens) as the worker times it, median over BENCH_RUNS texts after one warm-up;
//   lab.macs_per_s[L] its multiply-adds a second;
// - lab.swap[draws]: a 128-token text with Performer's positive features (prf-pos, m = 256) in
//   every layer, 1 and 3 draws: swap_forward_ms a forward with the swap, exact_ms from the text
//   typed to its exact report on the page, answer_ms to the swapped perplexity (the exact
//   forward, then the first draw, each split over both workers), all_draws_ms to the swap's
//   last draw, split_draws the draws computed by both workers together; lab.swap.on_scored_text[layers]: the same
//   swap (one draw) chosen on a text already scored, every layer and layers 20-29: answer_ms
//   from the choice to the swapped perplexity (the exact score kept, only the swap runs);
// - lab.chart[method]: the per-layer chart of a 128-token text (30 bars, each layer alone),
//   elu + 1 (one draw) and prf-pos (3 draws, round by round): first_bar_ms, all_bars_ms (every
//   bar's first draw) and total_ms from the chart's request, parts the workers sharing it;
// - lab.transfer[layers]: attention transfer of layers 0-1 (40 steps) and of all 30 (20 steps)
//   on the page's two workers, judged on a 128-token text: each layer's training time (its
//   samples and steps, median and max), wall_ms from the request to the verdict, and the three
//   perplexities;
// - wllama: { version, threads_in_effect, load_ms, forward_ms[threadsN][L] } on the same texts
//   (its prompt evaluation of the lab's token ids), or { skipped } / { error };
//   ratio_to_wllama[L] = lab.forward_ms[L] / wllama's faster thread count at L;
//   agreement[L]: the fraction of positions where the lab's most likely next token (exact
//   attention) is wllama's, and whether both tokenised the texts alike.
import { serveDist, launchBrowser, openPage } from './harness.mjs';
import { execFileSync } from 'node:child_process';
import { access } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { resolve } from 'node:path';

const root = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const runs = Math.max(3, Number(process.env.BENCH_RUNS ?? 3));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const k = s.length >> 1; return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2; };
const round = (x) => (x == null ? null : Number(x.toFixed(1)));
const LENGTHS = [32, 128, 512];
// Words that are one token each after a space: a text of n of them is n tokens (no BOS).
const WORDS = ['the', 'cat', 'sat', 'on', 'a', 'mat', 'and', 'dog', 'ran', 'to', 'house', 'with', 'red', 'blue', 'book', 'tree', 'water', 'light', 'small', 'large'];
const textOf = (tokens, seed) => Array.from({ length: tokens }, (_, i) => WORDS[(i * 7 + seed * 13 + (i * i) % 5) % WORDS.length]).join(' ');

async function ready(page, timeout = 300_000) {
  await page.waitForFunction(() => {
    const status = document.querySelector('.lm-status');
    if (status?.dataset.lmState === 'failed') throw new Error(status.textContent);
    return status?.dataset.lmState === 'ready';
  }, null, { timeout, polling: 50 });
}

/** Ready, and the link's own text answered (so that the next answer is the next text's). */
async function firstAnswer(page) {
  await ready(page);
  await page.waitForFunction(() => Number(document.querySelector('.lm-figure')?.dataset.answer ?? 0) > 0, null, { timeout: 300_000 });
}

const answerCount = (page) => page.evaluate(() => Number(document.querySelector('.lm-figure')?.dataset.answer ?? 0));

/** Types `text` (one input event, as a paste) and waits for its answer; returns the wall time. */
async function score(page, text) {
  const before = await answerCount(page);
  const started = await page.evaluate(() => performance.now());
  await page.$eval('textarea[name="lm-text"]', (area, text) => {
    area.value = text;
    area.dispatchEvent(new Event('input', { bubbles: true }));
  }, text);
  await page.waitForFunction((before) => {
    if (document.querySelector('.lm-figure .error')) throw new Error(document.querySelector('.lm-figure .error').textContent);
    return Number(document.querySelector('.lm-figure')?.dataset.answer ?? 0) > before
      && document.querySelector('.lm-exact');
  }, before, { timeout: 300_000, polling: 20 });
  return (await page.evaluate(() => performance.now())) - started;
}

const tokensOnPage = (page) => page.$$eval('.lm-token', (spans) => spans.map((s) => ({ id: Number(s.dataset.id), next: Number(s.dataset.nextId) })));

export async function benchLm(browser, server) {
  const readyMs = [];
  const loadMs = [];
  for (let i = 0; i < 3; i += 1) {
    const { page, context } = await openPage(browser, `${server.url}?view=lm&lmmethod=none`);
    await ready(page);
    readyMs.push(await page.evaluate(() => performance.now()));
    loadMs.push(Number(await page.getAttribute('.lm-status', 'data-load-ms')));
    await context.close();
  }
  const { page, context, problems } = await openPage(browser, `${server.url}?view=lm&lmmethod=none`);
  await firstAnswer(page);
  const forward = {};
  const macs = {};
  const timedTexts = {};
  const labTokens = {};
  let seed = 1;
  for (const len of LENGTHS) {
    const samples = [];
    const texts = Array.from({ length: runs + 1 }, (_, i) => textOf(len, seed + i));
    seed += runs + 1;
    for (let i = 0; i < texts.length; i += 1) {
      await score(page, texts[i]);
      const tokens = await page.$$eval('.lm-token', (spans) => spans.length);
      if (tokens !== len) throw new Error(`a text of ${len} tokens gave ${tokens}`);
      if (i > 0) samples.push(Number(await page.getAttribute('.lm-exact', 'data-forward-ms')));
      if (i === 1) {
        timedTexts[len] = texts[i];
        labTokens[len] = await tokensOnPage(page);
      }
    }
    forward[len] = round(median(samples));
    macs[len] = await page.evaluate((len) => {
      // The forward's multiply-adds, as the report counts them (the summary line says them).
      const m = /for ([0-9.e+]+) multiply-adds/.exec(document.querySelector('.lm-exact')?.textContent ?? '');
      return m ? Number(m[1]) : null;
    }, len);
    macs[len] = macs[len] ? Number((macs[len] / (forward[len] / 1000)).toExponential(3)) : null;
  }
  await context.close();

  // One swap: prf-pos in every layer, one draw and the page's default three (the first worker
  // scores the text while the second computes the first draw; then each takes a draw).
  const swap = {};
  for (const draws of [1, 3]) {
    const swapPage = await openPage(browser, `${server.url}?view=lm&lmmethod=prf-pos&lmlayers=all&swapdraws=${draws}&lmchart=off`);
    await firstAnswer(swapPage.page);
    await swapPage.page.waitForSelector('.lm-swapped[data-pending-draws="0"]', { timeout: 300_000 });
    const swapSamples = [];
    const exactSamples = [];
    const answerSamples = [];
    const allDrawsSamples = [];
    for (let i = 0; i <= runs; i += 1) {
      // Timed in the page, by a MutationObserver, from the input event to the exact report,
      // the first swapped perplexity and the last draw on screen.
      const { exactWall, wall, allDraws } = await swapPage.page.evaluate((text) => new Promise((resolve, reject) => {
        const figure = () => document.querySelector('.lm-figure');
        const before = Number(figure()?.dataset.answer ?? 0);
        const times = {};
        const started = performance.now();
        const look = () => {
          if (document.querySelector('.lm-figure .error')) reject(new Error(document.querySelector('.lm-figure .error').textContent));
          if (Number(figure()?.dataset.answer ?? 0) <= before || !document.querySelector('.lm-exact')) return;
          const now = performance.now() - started;
          times.exactWall ??= now;
          const swapped = document.querySelector('.lm-swapped');
          if (swapped?.dataset.swappedPerplexity) times.wall ??= now;
          if (times.wall != null && swapped?.dataset.pendingDraws === '0') {
            times.allDraws = now;
            observer.disconnect();
            resolve(times);
          }
        };
        const observer = new MutationObserver(look);
        observer.observe(document.body, { subtree: true, childList: true, attributes: true });
        const area = document.querySelector('textarea[name="lm-text"]');
        area.value = text;
        area.dispatchEvent(new Event('input', { bubbles: true }));
      }), textOf(128, 100 + i));
      if (i > 0) {
        swapSamples.push(Number(await swapPage.page.getAttribute('.lm-swapped', 'data-swap-forward-ms')));
        exactSamples.push(exactWall);
        answerSamples.push(wall);
        allDrawsSamples.push(allDraws);
      }
    }
    const split = await swapPage.page.getAttribute('.lm-swapped', 'data-split-draws');
    swap[draws] = { tokens: 128, method: 'prf-pos', layers: 'all', draws, split_draws: Number(split), swap_forward_ms: round(median(swapSamples)), exact_ms: round(median(exactSamples)), answer_ms: round(median(answerSamples)), all_draws_ms: round(median(allDrawsSamples)) };
    problems.push(...swapPage.problems);
    await swapPage.context.close();
  }

  // One swap on a text already scored: the reader reads the exact losses, then picks a method.
  // The first worker kept the text's exact run, so only the swap runs, both workers free:
  // prf-pos, one draw, in every layer, and in layers 20-29 alone (from the kept exact states
  // entering layer 20). answer_ms: from the choice to the swapped perplexity on the page.
  const kept = {};
  for (const layers of ['all', '20-29']) {
    const k = await openPage(browser, `${server.url}?view=lm&lmmethod=none&lmlayers=${layers}&swapdraws=1&lmchart=off`);
    await firstAnswer(k.page);
    const answerSamples = [];
    const forwardSamples = [];
    for (let i = 0; i <= runs; i += 1) {
      await score(k.page, textOf(128, 300 + i));
      const before = await answerCount(k.page);
      const started = await k.page.evaluate(() => performance.now());
      await k.page.selectOption('#control-lmmethod', 'prf-pos');
      await k.page.waitForFunction((before) => Number(document.querySelector('.lm-figure')?.dataset.answer ?? 0) > before
        && document.querySelector('.lm-swapped')?.dataset.pendingDraws === '0', before, { timeout: 300_000, polling: 20 });
      const wall = (await k.page.evaluate(() => performance.now())) - started;
      if (await k.page.$eval('.lm-exact', (e) => e.dataset.exactKept) !== 'true') throw new Error('the exact score was computed again');
      if (i > 0) {
        answerSamples.push(wall);
        forwardSamples.push(Number(await k.page.getAttribute('.lm-swapped', 'data-swap-forward-ms')));
      }
      const back = await answerCount(k.page);
      await k.page.selectOption('#control-lmmethod', 'none');
      await k.page.waitForFunction((back) => Number(document.querySelector('.lm-figure')?.dataset.answer ?? 0) > back, back, { timeout: 60_000, polling: 20 });
    }
    kept[layers] = { tokens: 128, method: 'prf-pos', layers, draws: 1, swap_forward_ms: round(median(forwardSamples)), answer_ms: round(median(answerSamples)) };
    problems.push(...k.problems);
    await k.context.close();
  }
  swap.on_scored_text = kept;

  // The per-layer chart at 128 tokens, once the second worker has the file (a first chart).
  const chart = {};
  for (const [method, draws] of [['elu', 1], ['prf-pos', 3]]) {
    const c = await openPage(browser, `${server.url}?view=lm&lmmethod=${method}&swapdraws=${draws}&lmlayers=5`);
    await firstAnswer(c.page);
    const done = (page) => page.waitForFunction(() => document.querySelector('.lm-layer-chart')?.dataset.done === 'true', null, { timeout: 600_000, polling: 50 });
    await score(c.page, textOf(32, 200));
    await done(c.page);
    await score(c.page, textOf(128, 201));
    await done(c.page);
    const data = await c.page.$eval('.lm-layer-chart', (e) => ({ ...e.dataset }));
    chart[method] = { draws, tokens: 128, parts: Number(data.parts), bars: Number(data.bars), first_bar_ms: Number(data.firstBarMs), all_bars_ms: Number(data.allBarsMs), total_ms: Number(data.totalMs) };
    problems.push(...c.problems);
    await c.context.close();
  }
  // Attention transfer (issue 49): two layers at 40 steps and all 30 at 20, trained on the
  // lab's 256-token transfer text, judged on a 128-token text.
  const transfer = {};
  for (const [layers, steps] of [['0-1', 40], ['all', 20]]) {
    const text = encodeURIComponent(textOf(128, 300));
    const t = await openPage(browser, `${server.url}?view=lm&lmmethod=none&lmchart=off&lmtrain=${layers}&lmsteps=${steps}&text=${text}`);
    await t.page.waitForSelector('.lm-transfer[data-done="true"]', { timeout: 600_000 });
    const data = await t.page.$eval('.lm-transfer', (e) => ({ ...e.dataset }));
    const perLayer = data.trainMs.split(',').map((p) => Number(p.split(':')[1]));
    transfer[layers] = {
      steps,
      training_tokens: 256,
      held_out_tokens: 128,
      layer_ms_median: round(median(perLayer)),
      layer_ms_max: round(Math.max(...perLayer)),
      wall_ms: Number(data.wallMs),
      perplexity: { exact: round(Number(data.exact)), zero_shot: round(Number(data.zeroShot)), transferred: round(Number(data.transferred)) },
    };
    problems.push(...t.problems);
    await t.context.close();
  }
  return {
    lab: {
      transfer,
      ready_ms: round(median(readyMs)),
      load_ms: round(median(loadMs)),
      forward_ms: forward,
      macs_per_s: macs,
      swap,
      chart,
      problems,
    },
    timedTexts,
    labTokens,
  };
}

/** wllama on the lab's texts, when its module and package are there. */
async function benchWllama(browser, timedTexts, labTokens) {
  const module = new URL('./wllama-peer.mjs', import.meta.url);
  try {
    await access(fileURLToPath(module));
  } catch {
    return { skipped: 'tests/e2e/wllama-peer.mjs is missing' };
  }
  if (process.env.BENCH_SKIP_PEER) return { skipped: 'BENCH_SKIP_PEER is set' };
  const { runWllama } = await import(module.href);
  const ggufPath = execFileSync(`${root}/scripts/fetch-model.sh`, ['--print-lm-path'], { encoding: 'utf8' }).trim();
  const texts = LENGTHS.map((len) => ({ name: String(len), text: timedTexts[len] }));
  const peer = await runWllama({ browser, ggufPath, texts, runs });
  if (peer.skipped || peer.error) return { peer };
  const forwardMs = {};
  const agreement = {};
  for (const r of peer.results) {
    const len = Number(r.name);
    for (const [threads, ms] of Object.entries(r.forward_ms)) {
      forwardMs[threads] ??= {};
      forwardMs[threads][len] = round(ms);
    }
    const lab = labTokens[len];
    const sameIds = lab.length === r.tokens.length && lab.every((t, i) => t.id === r.tokens[i]);
    const compared = Math.min(lab.length, r.argmax?.length ?? 0);
    let agree = 0;
    for (let i = 0; i < compared; i += 1) if (lab[i].next === r.argmax[i]) agree += 1;
    agreement[len] = { same_ids: sameIds, positions: compared, top1_agree: compared ? Number((agree / compared).toFixed(4)) : null };
  }
  return { peer: { version: peer.version, threads_in_effect: peer.threads_in_effect, cross_origin_isolated: peer.crossOriginIsolated, load_ms: peer.load_ms, forward_ms: forwardMs }, agreement };
}

const isMain = process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const server = await serveDist();
  const browser = await launchBrowser('chromium');
  try {
    const { lab, timedTexts, labTokens } = await benchLm(browser, server);
    let wllama;
    try {
      wllama = await benchWllama(browser, timedTexts, labTokens);
    } catch (error) {
      wllama = { peer: { error: String(error?.message ?? error) } };
    }
    const ratio = {};
    const peerForward = wllama.peer?.forward_ms;
    for (const len of LENGTHS) {
      const best = peerForward ? Math.min(...Object.values(peerForward).map((byLen) => byLen[len]).filter(Number.isFinite)) : NaN;
      ratio[len] = Number.isFinite(best) ? Number((lab.forward_ms[len] / best).toFixed(3)) : null;
    }
    console.log(JSON.stringify({ lm: { lab, wllama: wllama.peer ?? wllama, agreement: wllama.agreement ?? null, ratio_to_wllama: ratio } }));
  } finally {
    await browser.close();
    await server.close();
  }
}
