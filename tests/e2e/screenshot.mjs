// Saves a screenshot of the release build for a person to look at (and the README's):
//   node tests/e2e/screenshot.mjs [query] [out.png] [deviceScaleFactor] [width] [height] [full|viewport]
// In the browser of E2E_BROWSER (chromium or firefox). Prints any page or console error, the
// page's status, and whether it scrolls sideways (it must not).
import { serveDist, launchBrowser, openPage, waitReady } from './harness.mjs';

const [query = '', out = 'screenshots/page.png', scale = '1', width = '1400', height = '1000', mode = 'full'] = process.argv.slice(2);
const server = await serveDist();
const browser = await launchBrowser();
try {
  const { page, problems } = await openPage(browser, server.url + query, {
    deviceScaleFactor: Number(scale),
    width: Number(width),
    height: Number(height),
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
  } else {
    await waitReady(page, 120_000);
  }
  // Charts redraw once their size settles.
  await page.waitForTimeout(1_000);
  await page.screenshot({ path: out, fullPage: mode === 'full' });
  const [scrollWidth, clientWidth] = await page.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
  console.log(JSON.stringify({ out, problems, status: await page.getAttribute('.app', 'data-status'), statusLine: await page.textContent('.status'), scrollsSideways: scrollWidth > clientWidth }));
} finally {
  await browser.close();
  await server.close();
}
