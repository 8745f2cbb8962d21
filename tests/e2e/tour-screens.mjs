// Screenshots of the guided tour's steps on a phone (390 × 844, touch) for docs/teaching.md:
//   node tests/e2e/tour-screens.mjs [out-dir]   (default docs/img/tour)
// Each step is opened by its link, answered with its first option, and shot once the page has
// said what it measured, at the top of the page. In the browser of E2E_BROWSER.
import { mkdirSync } from 'node:fs';
import { serveDist, launchBrowser, openPage } from './harness.mjs';

const out = process.argv[2] ?? new URL('../../docs/img/tour', import.meta.url).pathname;
mkdirSync(out, { recursive: true });
const server = await serveDist();
const browser = await launchBrowser();
try {
  for (let step = 1; ; step += 1) {
    const { page, problems, context } = await openPage(browser, `${server.url}?tour=${step}`, { width: 390, height: 844 });
    const found = await page.waitForSelector('.tour', { timeout: 30_000 }).then(() => true, () => false);
    if (!found || (await page.getAttribute('.tour', 'data-tour-index')) !== String(step)) {
      await context.close();
      break;
    }
    await page.locator('.tour-option input').first().check();
    await page.click('.tour-reveal');
    await page.waitForFunction(() => {
      const state = document.querySelector('.tour-answer')?.dataset.tourAnswer;
      return state && state !== 'pending';
    }, null, { timeout: 240_000 });
    await page.waitForTimeout(500);
    const wide = await page.evaluate(() => document.documentElement.scrollWidth > innerWidth);
    await page.screenshot({ path: `${out}/phone-${step}.png` });
    console.log(`step ${step}: ${out}/phone-${step}.png${wide ? ' (scrolls sideways!)' : ''}${problems.length ? ` ${problems}` : ''}`);
    await context.close();
  }
} finally {
  await browser.close();
  await server.close();
}
