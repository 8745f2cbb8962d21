// Saves screenshots of the release build for a person to look at:
//   node tests/e2e/screenshot.mjs [query] [out.png] [deviceScaleFactor]
import { serveDist, launchBrowser, openPage, waitReady } from './harness.mjs';

const [query = '', out = 'screenshots/page.png', scale = '1'] = process.argv.slice(2);
const server = await serveDist();
const browser = await launchBrowser();
try {
  const { page, problems } = await openPage(browser, server.url + query, { deviceScaleFactor: Number(scale) });
  await waitReady(page, 120_000);
  await page.screenshot({ path: out, fullPage: true });
  console.log(JSON.stringify({ out, problems, status: await page.getAttribute('.app', 'data-status'), statusLine: await page.textContent('.status') }));
} finally {
  await browser.close();
  await server.close();
}
