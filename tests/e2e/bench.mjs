// Web app benchmark: sizes of dist/ (raw and gzip), time to first render and from a keystroke
// to the updated chart, in headless Chromium, median of RUNS runs. Usage (after `trunk build
// --release`): node bench.mjs [RUNS]. Prints a Markdown table for BENCHMARKS.md.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch } from './browser.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DIST = path.resolve(HERE, '../../dist');
const RUNS = Number(process.argv[2] ?? 7);
const PORT = 9100 + Math.floor(Math.random() * 500);
const ORIGIN = `http://127.0.0.1:${PORT}`;
const median = xs => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

// the reference suite is not part of the first load: the accuracy panel fetches it when
// opened (and the service worker caches it after the page has loaded)
const LAZY = new Set(['probe_records.jsonl', 'dist_records.jsonl', 'published_cases.json']);
const files = readdirSync(DIST).filter(f => statSync(path.join(DIST, f)).isFile());
let raw = 0, gz = 0, lazyRaw = 0, lazyGz = 0;
const rows = [], lazyRows = [];
for (const f of files.sort()) {
  const b = readFileSync(path.join(DIST, f));
  const g = gzipSync(b, { level: 9 }).length;
  const row = `| ${f.replace(/-[0-9a-f]{8,}/, '-<hash>')} | ${(b.length / 1024).toFixed(1)} | ${(g / 1024).toFixed(1)} |`;
  if (LAZY.has(f)) { lazyRaw += b.length; lazyGz += g; lazyRows.push(row); } else { raw += b.length; gz += g; rows.push(row); }
}

const server = spawn('python3', ['-m', 'http.server', String(PORT), '--bind', '127.0.0.1', '--directory', DIST], { stdio: 'ignore' });
for (let i = 0; i < 100; i++) { try { await fetch(ORIGIN); break; } catch { await new Promise(r => setTimeout(r, 100)); } }
const browser = await launch();
const first = [], toMark = [], toFrame = [], planMs = [];
for (let i = 0; i < RUNS; i++) {
  const context = await browser.newContext({ serviceWorkers: 'block' });
  const page = await context.newPage();
  await page.goto(ORIGIN);
  await page.locator('#verdict').waitFor();
  first.push(await page.evaluate(() => performance.getEntriesByName('first-render')[0].startTime));
  for (let k = 0; k < 5; k++) {
    const t = await page.evaluate(async v => {
      const input = document.querySelector('#training-micro_batch_size');
      // the chart's new SVG in the DOM (a MutationObserver callback runs right after the change)
      let inDom = NaN;
      const obs = new MutationObserver(() => { if (isNaN(inDom)) inDom = performance.now(); });
      obs.observe(document.querySelector('#chart'), { childList: true, subtree: true });
      const t0 = performance.now();
      input.value = String(v);
      input.dispatchEvent(new Event('input', { bubbles: true }));
      const frame = await new Promise(r => requestAnimationFrame(() => r(performance.now())));
      obs.disconnect();
      return [inDom - t0, frame - t0];
    }, 2 + (k % 3));
    toMark.push(t[0]); toFrame.push(t[1]);
  }
  if (i === 0) {
    // the plan search (issue 15): Llama-3.1-70B, 8192 tokens, 16 to 96 H100s, 4M tokens
    // per step (104 712 candidates), timed between the app's plan-start and plan-searched
    // marks; five searches (the headroom toggles between "5" and "5.0": the same request)
    await page.selectOption('#model-preset', 'llama-3.1-70b');
    await page.fill('#training-seq_len', '8192');
    await page.locator('#plan summary').click();
    await page.fill('#plan-max-gpus', '96');
    await page.fill('#plan-batch', '4M');
    await page.fill('#plan-gpus', '16');
    for (let k = 0; k < 6; k++) {
      await page.fill('#plan-headroom', k % 2 ? '5.0' : '5');
      await page.locator('#plan-message', { hasText: '104712 candidates' }).waitFor({ timeout: 60000 });
      await page.waitForTimeout(300);
    }
    const all = await page.evaluate(() => {
      const s = performance.getEntriesByName('plan-start'), e = performance.getEntriesByName('plan-searched');
      return s.map((x, j) => e[j].startTime - x.startTime);
    });
    planMs.push(...all.slice(-5));
  }
  await context.close();
}
await browser.close();
server.kill();

console.log(`| file (first load) | raw KiB | gzip KiB |\n|---|---|---|\n${rows.join('\n')}\n| **total** | **${(raw / 1024).toFixed(1)}** | **${(gz / 1024).toFixed(1)}** |\n`);
console.log(`| file (on demand: the accuracy panel) | raw KiB | gzip KiB |\n|---|---|---|\n${lazyRows.join('\n')}\n| **total** | **${(lazyRaw / 1024).toFixed(1)}** | **${(lazyGz / 1024).toFixed(1)}** |\n`);
console.log(`| measure (median of ${RUNS} page loads, 5 keystrokes each) | ms |\n|---|---|`);
console.log(`| first render (navigation start to the app mounted, first estimate and chart drawn) | ${median(first).toFixed(1)} |`);
console.log(`| keystroke to chart (input event to the new chart SVG in the DOM) | ${median(toMark).toFixed(1)} |`);
console.log(`| keystroke to next frame (input event to the following requestAnimationFrame, includes waiting for vsync) | ${median(toFrame).toFixed(1)} |`);
console.log(`| plan search, Llama-3.1-70B, 16-96 H100, 4M tokens of 8192 (104 712 candidates; median of the last 5 searches of the first load) | ${median(planMs).toFixed(1)} |`);
