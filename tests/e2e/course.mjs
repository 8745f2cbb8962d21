// A course page that embeds the lab's figures, as a teacher would host it: the `<iframe>`
// snippets of docs/teaching.md ("Embedding a figure in a course page") in a plain HTML page at
// /course/, and the built lab (dist/) at /course/lab/, both from a dumb static server (files
// only; a folder answers with its index.html). Used by embed.test.mjs and, run as a script, to
// take the docs' screenshot:
//   node tests/e2e/course.mjs [out.png] [docs|small] [height]
// (`small`: the test's smaller states, `docs` the docs' own; `height`: only the page's top
// `height` CSS pixels, for a picture of modest size.)
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { distDir, launchBrowser, mimeTypes, openPage } from './harness.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const teaching = resolve(here, '..', '..', 'docs', 'teaching.md');

export const COURSE = '/course/';
export const LAB = '/course/lab/';

/**
 * The `<iframe>` snippets of docs/teaching.md's embedding section, in order:
 * [{ figure, html, src, title, width, height }] (`src` as written, `&amp;` decoded).
 */
export function snippets() {
  const text = readFileSync(teaching, 'utf8');
  const section = text.split('## Embedding a figure in a course page')[1]?.split(/\n## /)[0];
  if (!section) throw new Error('docs/teaching.md has no section "Embedding a figure in a course page"');
  return [...section.matchAll(/```html\n(<iframe[\s\S]*?<\/iframe>)\n```/g)].map(([, html]) => {
    const attr = (name) => html.match(new RegExp(`\\b${name}="([^"]*)"`))?.[1];
    const src = attr('src').replaceAll('&amp;', '&');
    return {
      figure: new URLSearchParams(src.split('?')[1]).get('embed'),
      html,
      src,
      title: attr('title'),
      width: Number(attr('width')),
      height: Number(attr('height')),
      loading: attr('loading'),
    };
  });
}

/** The test's smaller state for a snippet's `src`: fewer pairs and datasets, the shortest study. */
export function smaller(src) {
  const [path, query] = src.split('?');
  const params = new URLSearchParams(query);
  const figure = params.get('embed');
  if (['scatter', 'errors', 'mse-vs-m'].includes(figure)) {
    params.set('n', '200');
    params.set('datasets', '5');
    params.set('pairs', '100');
  }
  if (figure === 'lengths') {
    params.set('lmax', '256');
    params.set('features', '16');
  }
  return `${path}?${params}`;
}

/** The course page: a heading, a paragraph and each snippet (its `src` made smaller if asked). */
export function coursePage({ small = false } = {}) {
  const frames = snippets().map((s) => {
    const html = small ? s.html.replace(/\bsrc="[^"]*"/, `src="${smaller(s.src).replaceAll('&', '&amp;')}"`) : s.html;
    return `<h2>${s.figure}</h2>\n${html}`;
  });
  return `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">
<title>Random features: a course page</title>
<style>body { font-family: system-ui, sans-serif; max-width: 860px; margin: 0 auto; padding: 12px; } h2 { font-size: 1rem; margin: 18px 0 4px; }</style>
</head>
<body>
<main>
<h1>Week 5: random features for the softmax kernel</h1>
<p>Move the controls in each figure; "Open in the full lab" opens the whole lab at the same state.</p>
${frames.join('\n')}
</main>
</body>
</html>
`;
}

/**
 * Serves the course page at /course/ and dist/ at /course/lab/ on 127.0.0.1; anything else is
 * a 404 (so a file asked from the domain's root fails). Resolves to
 * { origin, course, lab, requests, close }.
 */
export async function serveCourse({ small = false, dir = distDir } = {}) {
  const requests = [];
  const page = coursePage({ small });
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname);
    requests.push(path);
    const notFound = () => {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    };
    if (path === COURSE || path === `${COURSE}index.html`) {
      res.writeHead(200, { 'content-type': mimeTypes['.html'] });
      res.end(page);
      return;
    }
    if (!path.startsWith(LAB)) {
      notFound();
      return;
    }
    let relative = normalize(path.slice(LAB.length - 1)).replace(/^(\.\.[/\\])+/, '');
    if (relative.endsWith('/')) relative += 'index.html';
    try {
      const body = await readFile(join(dir, relative));
      res.writeHead(200, { 'content-type': mimeTypes[extname(relative)] ?? 'application/octet-stream' });
      res.end(body);
    } catch {
      notFound();
    }
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const origin = `http://127.0.0.1:${server.address().port}`;
  return {
    origin,
    course: `${origin}${COURSE}`,
    lab: `${origin}${LAB}`,
    requests,
    close: () => new Promise((ok) => server.close(ok)),
  };
}

/** Whether a frame's figure is drawn: the page's own ready attributes, per figure. */
export function figureReady(figure) {
  switch (figure) {
    case 'rows': return '.embed .attention-view[data-attention-status="ready"]';
    case 'lengths': return '.embed .lengths[data-lengths-status="ready"]';
    default: return '.app.embed[data-status="ready"]';
  }
}

// As a script: a screenshot of the course page with every frame drawn.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [out = 'screenshots/course.png', mode = 'docs', height = ''] = process.argv.slice(2);
  const served = await serveCourse({ small: mode === 'small' });
  const browser = await launchBrowser();
  try {
    const { page, problems } = await openPage(browser, served.course, { width: 900, height: 900 });
    for (const s of snippets()) {
      const frameElement = page.locator(`iframe[title="${s.title}"]`);
      await frameElement.scrollIntoViewIfNeeded();
      const frame = await (await frameElement.elementHandle()).contentFrame();
      await frame.waitForSelector(figureReady(s.figure), { timeout: 300_000 });
    }
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.waitForTimeout(1_000);
    const clip = height ? { x: 0, y: 0, width: 900, height: Number(height) } : undefined;
    await page.screenshot({ path: out, fullPage: true, clip });
    console.log(JSON.stringify({ out, problems }));
  } finally {
    await browser.close();
    await served.close();
  }
}
