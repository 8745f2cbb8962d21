import { serveDist, launchBrowser, openPage } from './harness.mjs';
const server = await serveDist();
const browser = await launchBrowser();
const shots = [
  ['syn', '?view=attention&len=256&d=32', 1400],
  ['minilm', '?view=attention&src=minilm&layer=2&head=3', 1400],
];
for (const [name, q, width] of shots) {
  const { page, problems, context } = await openPage(browser, server.url + q, { width, height: 1000 });
  try {
    await page.waitForFunction(() => document.querySelector('.attention-view')?.dataset.attentionStatus === 'ready', null, { timeout: 180000 });
    await page.waitForTimeout(name === 'minilm' ? 20000 : 8000);
  } catch (e) { console.log(name, 'timeout', e.message); }
  const status = await page.$eval('.attention-view', (e) => [e.dataset.attentionStatus, e.dataset.attentionMs, document.querySelector('.attention-view .status')?.textContent]).catch(() => null);
  console.log(name, JSON.stringify(status), 'problems', JSON.stringify(problems));
  const errs = await page.$$eval('.attention-view .error', (e) => e.map((x) => x.textContent));
  console.log('errors', JSON.stringify(errs));
  const figs = await page.$$('section.figure');
  let i = 0;
  for (const f of figs) { await f.screenshot({ path: `/tmp/shots/${name}-${i++}.png` }).catch((e) => console.log('shot fail', e.message)); }
  await page.screenshot({ path: `/tmp/shots/${name}-full.png`, fullPage: false });
  await context.close();
}
await browser.close(); await server.close();
