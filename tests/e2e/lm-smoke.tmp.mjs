import { serveDist, launchBrowser, openPage, browserName } from './harness.mjs';
const dir = process.env.DIST;
const [query, out, width = '1280', height = '800', scale = '1'] = process.argv.slice(2);
const server = await serveDist(dir);
const browser = await launchBrowser(browserName, {});
try {
  const { page, problems } = await openPage(browser, server.url + query, { width: Number(width), height: Number(height), deviceScaleFactor: Number(scale) });
  const t0 = Date.now();
  await page.waitForFunction(() => Number(document.querySelector('.lm-figure')?.dataset.answer ?? 0) > 0
    || document.querySelector('.lm-status')?.dataset.lmState === 'failed', null, { timeout: 600_000, polling: 200 });
  const t1 = Date.now();
  const token = await page.$('.lm-token >> nth=6');
  if (token) await token.hover();
  await page.waitForTimeout(500);
  await page.screenshot({ path: out, fullPage: true });
  const info = await page.evaluate(() => ({
    status: document.querySelector('.lm-status')?.textContent,
    exact: document.querySelector('.lm-exact')?.textContent,
    swapped: document.querySelector('.lm-swapped')?.textContent,
    tokens: document.querySelectorAll('.lm-token').length,
    figureError: document.querySelector('.lm-figure .error')?.textContent,
    scroll: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
  }));
  console.log(JSON.stringify({ ms: t1 - t0, problems, ...info }, null, 1));
} finally {
  await browser.close();
  await server.close();
}
