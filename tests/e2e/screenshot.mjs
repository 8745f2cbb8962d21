// Saves a screenshot of the release build for a person to look at (and the README's):
//   node tests/e2e/screenshot.mjs [--phone|--tablet] [query|URL] [out.png] [deviceScaleFactor] [width] [height] [full|viewport]
// In the browser of E2E_BROWSER (chromium or firefox). `query` is added to the served build's
// address (`?view=attention`); a whole http(s) URL is opened as it is. Prints any page or
// console error, the page's status, and whether it scrolls sideways (it must not).
//   --phone   a phone: 390 × 844 CSS px at deviceScaleFactor 3, with a touch screen (Chromium:
//             also isMobile; Firefox: launched as a touch device, harness.mjs launchBrowser)
//   --tablet  a tablet held upright: 768 × 1024 at deviceScaleFactor 2, with a touch screen
// The numbers after out.png still override the device's, e.g.
//   node tests/e2e/screenshot.mjs --phone '?view=attention' attention-phone.png
//   node tests/e2e/screenshot.mjs --phone '?view=attention' top.png 2 390 844 viewport
import { serveDist, launchBrowser, openPage, waitReady, browserName } from './harness.mjs';

const devices = {
  '--phone': { scale: '3', width: '390', height: '844' },
  '--tablet': { scale: '2', width: '768', height: '1024' },
};
const args = process.argv.slice(2);
const device = devices[args.find((a) => a in devices)];
const [query = '', out = 'screenshots/page.png', scale = device?.scale ?? '1', width = device?.width ?? '1400',
  height = device?.height ?? '1000', mode = 'full'] = args.filter((a) => !(a in devices));
const server = await serveDist();
const browser = await launchBrowser(browserName, { touch: Boolean(device) });
try {
  const url = /^https?:\/\//.test(query) ? query : server.url + query;
  const { page, problems } = await openPage(browser, url, {
    deviceScaleFactor: Number(scale),
    width: Number(width),
    height: Number(height),
    hasTouch: Boolean(device),
    isMobile: Boolean(device) && browserName === 'chromium',
  });
  if (query.includes('view=attention')) {
    await page.waitForSelector('.attention-view[data-attention-status="ready"]', { timeout: 180_000 });
    if (query.includes('src=text')) {
      // The model swap's jobs, one after another in the model worker.
      await page.waitForFunction(() => {
        const a = document.querySelector('.swap-answer');
        return a && Number(a.dataset.swapTotal) > 0 && a.dataset.swapDone === a.dataset.swapTotal;
      }, null, { timeout: 600_000 });
    }
  } else if (query.includes('view=lm')) {
    // The language model's answer (its file loads in its own worker), then a token chosen.
    await page.waitForFunction(() => Number(document.querySelector('.lm-figure')?.dataset.answer ?? 0) > 0
      || document.querySelector('.lm-status')?.dataset.lmState === 'failed', null, { timeout: 600_000 });
    // The per-layer chart, when a method is chosen: every bar in.
    if (!/lmmethod=none/.test(query)) {
      await page.waitForFunction(() => document.querySelector('.lm-layer-chart')?.dataset.done === 'true'
        || document.querySelector('.lm-status')?.dataset.lmState === 'failed', null, { timeout: 600_000 });
      console.error(JSON.stringify(await page.$eval('.lm-layer-chart', (c) => ({ ...c.dataset }))));
    }
    const token = await page.$('.lm-token >> nth=6');
    if (token) await token.hover();
  } else {
    await waitReady(page, 120_000);
  }
  // Charts redraw once their size settles.
  await page.waitForTimeout(1_000);
  await page.screenshot({ path: out, fullPage: mode === 'full' });
  const [scrollWidth, clientWidth] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  console.log(JSON.stringify({ out, problems, status: await page.getAttribute('.app', 'data-status'), statusLine: await page.textContent('.status'), scrollWidth, clientWidth, scrollsSideways: scrollWidth > clientWidth }));
} finally {
  await browser.close();
  await server.close();
}
