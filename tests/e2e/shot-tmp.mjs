import { serveDist, launchBrowser, openPage } from './harness.mjs';
const server = await serveDist();
const browser = await launchBrowser();
const url = `${server.url}?view=lm&lmmethod=prf-pos&lmlayers=3,10,20&lmchart=off&lmgen=48&text=${encodeURIComponent('The cat sat on the mat because it was warm, and the dog')}`;
for (const [w, h, name] of [[390, 844, 'phone']]) {
  const { page, context, problems } = await openPage(browser, url, { width: w, height: h, deviceScaleFactor: 2, hasTouch: w < 500, isMobile: w < 500 });
  await page.waitForSelector('.lm-continue[data-decoding="linear"][data-done="true"]', { timeout: 180000 });
  await page.waitForSelector('.lm-continue[data-decoding="exact"][data-done="true"]', { timeout: 180000 });
  await page.waitForTimeout(500);
  const fig = await page.$('.lm-continuations');
  await fig.screenshot({ path: `/tmp/cont-${name}.png` });
  console.log(name, JSON.stringify(problems), await page.$eval('.lm-crossover', (e) => e.textContent));
  await context.close();
}
await browser.close(); await server.close?.();
process.exit(0);
