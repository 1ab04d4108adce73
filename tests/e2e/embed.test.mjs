// examples/embed.html (a plain page using the npm package in pkg/) in headless Chromium.
// Needs ./scripts/build-pkg.sh first.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch } from './browser.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PORT = 8900 + Math.floor(Math.random() * 90);
const ORIGIN = `http://127.0.0.1:${PORT}`;
let server, browser;

before(async () => {
  server = spawn('python3', ['-m', 'http.server', String(PORT), '--bind', '127.0.0.1', '--directory', ROOT], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    try { await fetch(`${ORIGIN}/examples/embed.html`); break; } catch { await new Promise(r => setTimeout(r, 100)); }
  }
  browser = await launch();
});
after(async () => { await browser?.close(); server?.kill(); });

test('the embedding example renders an estimate from the package', async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(`${ORIGIN}/examples/embed.html`);
  await page.locator('#summary', { hasText: /Fits|Does not fit/ }).waitFor();
  assert.equal(await page.locator('#model').textContent(), 'Llama-3.1-8B');
  assert.match(await page.locator('#summary').textContent(), /GiB of 79\.18 GiB per GPU/);
  assert.ok(await page.locator('#components tr[data-component="weights"]').count() === 1);
  // the same number as the package in Node computes (tests/pkg/api.test.mjs checks those)
  const weights = parseFloat(await page.locator('#components tr[data-component="weights"] td.num').textContent());
  assert.ok(weights > 1 && weights < 3, `ZeRO-3 over 8 GPUs: ~1.9 GiB of bf16 weights, got ${weights}`);
  assert.deepEqual(errors, []);
});
