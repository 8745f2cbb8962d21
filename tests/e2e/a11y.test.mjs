// End-to-end accessibility: axe-core (harness.mjs `axeViolations`) on the default page, a
// preset, the attention view and the single-pair probe of the release build, once each is computed. Every
// test asserts zero violations and no page or console error (the page keeps its
// Content-Security-Policy: axe-core comes in as a script of the page's own origin).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { serveDist, launchBrowser, openPage, waitReady, axeViolations, formatViolations } from './harness.mjs';

let server;
let browser;

before(async () => {
  server = await serveDist();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

async function assertAccessible(page, problems, label) {
  const violations = await axeViolations(page);
  assert.deepEqual(problems, [], `${label}: page or console errors`);
  assert.equal(violations.length, 0, `${label}: ${violations.length} axe violation(s):\n${formatViolations(violations)}`);
}

test('axe: the default page, once computed', async () => {
  const { page, problems, context } = await openPage(browser, server.url);
  try {
    await waitReady(page, 90_000);
    await assertAccessible(page, problems, 'default page');
  } finally {
    await context.close();
  }
});

test('axe: a preset chosen from the presets row (large norms), with the complex-A controls in use', async () => {
  const { page, problems, context } = await openPage(browser, `${server.url}?est=cexp-var,hcplx&theta=0.7`);
  try {
    await waitReady(page, 90_000);
    await page.click('a.preset[data-preset="large-norms"]');
    await page.waitForSelector('.preset-explanation');
    await waitReady(page, 90_000);
    assert.match(page.url(), /xnorm=50/);
    await assertAccessible(page, problems, 'large-norms preset');
  } finally {
    await context.close();
  }
});

test('axe: the attention view (len=64), once computed', async () => {
  const { page, problems, context } = await openPage(browser, `${server.url}?view=attention&len=64`);
  try {
    await page.waitForSelector('.attention-view[data-attention-status="ready"]', { timeout: 120_000 });
    await assertAccessible(page, problems, 'attention view');
  } finally {
    await context.close();
  }
});

test('axe: the single-pair probe (probe=3), once computed', async () => {
  const { page, problems, context } = await openPage(browser, `${server.url}?probe=3`);
  try {
    await waitReady(page, 90_000);
    await page.waitForFunction(() => [...document.querySelectorAll('.probe .caption')]
      .some((c) => c.textContent.includes('pair 3 of the scatter dataset')), null, { timeout: 60_000 });
    await assertAccessible(page, problems, 'probe');
  } finally {
    await context.close();
  }
});
