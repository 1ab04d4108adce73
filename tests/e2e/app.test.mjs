// Browser tests of the built site (dist/) in headless Chromium, served on 127.0.0.1.
// Run: (cd tests/e2e && node --test)   env: DIST (default ../../dist), BASE_PATH (default /),
// OUT_DIR for screenshots (default ../../target/e2e).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, symlinkSync, readFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DIST = path.resolve(HERE, process.env.DIST ?? '../../dist');
const BASE = process.env.BASE_PATH ?? '/';
const OUT = path.resolve(HERE, process.env.OUT_DIR ?? '../../target/e2e');
const PORT = 8100 + Math.floor(Math.random() * 800);
const ORIGIN = `http://127.0.0.1:${PORT}`;
let server, browser;

export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-quic', '--disable-features=Translate,OptimizationHints,MediaRouter'],
  });
}

before(async () => {
  mkdirSync(OUT, { recursive: true });
  let root = DIST;
  if (BASE !== '/') {
    root = mkdtempSync(path.join(tmpdir(), 'site-'));
    symlinkSync(DIST, path.join(root, BASE.replace(/^\/|\/$/g, '')));
  }
  server = spawn('python3', ['-m', 'http.server', String(PORT), '--bind', '127.0.0.1', '--directory', root], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    try { await fetch(`${ORIGIN}${BASE}`); break; } catch { await new Promise(r => setTimeout(r, 100)); }
  }
  browser = await launch();
});

after(async () => { await browser?.close(); server?.kill(); });

/** A page with error collection; fails the test on any console error, page error or HTTP error. */
async function openPage(context) {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('response', r => { if (r.status() >= 400) errors.push(`${r.status()} ${r.url()}`); });
  await page.goto(`${ORIGIN}${BASE}`);
  await page.locator('#verdict').waitFor();
  return { page, errors };
}

const gib = async (page, id) => parseFloat(await page.locator(id).textContent());

test('loads, computes, validates live, exports, copies and restores after reload', async () => {
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 1000 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: ORIGIN });
  const { page, errors } = await openPage(context);

  // a number and the chart
  await page.locator('#verdict', { hasText: /Fits|Does not fit/ }).waitFor();
  assert.ok(await gib(page, '#total-gib') > 1, 'total GiB shown');
  assert.ok(await page.locator('#chart svg rect').count() > 5, 'chart bars drawn');
  assert.ok(await page.locator('#breakdown tr[data-component="weights"]').count() === 1);

  // pick a preset: Llama-2-70B on the default 8 GPUs with ZeRO-3
  const before8b = await gib(page, '#total-gib');
  await page.selectOption('#model-preset', 'llama-2-70b');
  await page.locator('#model-info', { hasText: 'Llama-2-70b' }).waitFor();
  assert.match(await page.locator('#model-info').textContent(), /68\.98B parameters, 80 layers/);
  const after70b = await gib(page, '#total-gib');
  assert.ok(after70b > before8b, `70B (${after70b}) needs more than 8B (${before8b})`);

  // without recomputation the activations dominate, so the micro-batch moves the peak
  await page.selectOption('#training-activation_checkpointing', '"none"');
  await page.waitForFunction(prev => parseFloat(document.querySelector('#total-gib').textContent) !== prev, after70b);
  const noRecompute = await gib(page, '#total-gib');

  // an invalid value shows its error at the field, marks the result stale, keeps the number
  const mbs = page.locator('#training-micro_batch_size');
  await mbs.fill('0');
  await page.locator('#training-micro_batch_size-error', { hasText: 'from 1 to' }).waitFor();
  assert.equal(await mbs.getAttribute('aria-invalid'), 'true');
  assert.ok(await page.locator('section.results.stale').count() === 1, 'results marked stale');
  assert.equal(await gib(page, '#total-gib'), noRecompute, 'last valid result kept');
  await mbs.fill('abc');
  await page.locator('#training-micro_batch_size-error', { hasText: 'whole number' }).waitFor();
  await mbs.fill('2');
  await page.locator('#training-micro_batch_size-error').waitFor({ state: 'hidden' });
  assert.equal(await mbs.getAttribute('aria-invalid'), 'false');
  assert.ok(await page.locator('section.results.stale').count() === 0);
  assert.ok(await gib(page, '#total-gib') > noRecompute, 'micro-batch 2 needs more than 1');

  // a layout error is shown at the field that carries it
  await page.locator('#parallelism-data_parallel_size').fill('3');
  await page.locator('#parallelism-data_parallel_size-error', { hasText: 'must equal hardware.num_gpus' }).waitFor();
  await page.locator('#parallelism-data_parallel_size').fill('');
  await page.locator('#parallelism-data_parallel_size-error').waitFor({ state: 'hidden' });
  assert.equal(await page.locator('#general-errors').isVisible(), false);

  // export JSON
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#export')]);
  assert.equal(dl.suggestedFilename(), 'gpu-mem-calc-config.json');
  const exported = JSON.parse(readFileSync(await dl.path(), 'utf8'));
  assert.equal(exported.schema_version, 1);
  assert.equal(exported.model.preset, 'llama-2-70b');
  assert.equal(exported.training.micro_batch_size, 2);

  // copy JSON
  await page.click('#copy');
  await page.locator('#status', { hasText: 'Copied' }).waitFor();
  const copied = JSON.parse(await page.evaluate(() => navigator.clipboard.readText()));
  assert.equal(copied.training.micro_batch_size, 2);

  await page.screenshot({ path: path.join(OUT, 'app.png'), fullPage: true });

  // reload: the state comes back from localStorage
  await page.reload();
  await page.locator('#verdict', { hasText: /Fits|Does not fit/ }).waitFor();
  assert.equal(await page.locator('#training-micro_batch_size').inputValue(), '2');
  assert.equal(await page.locator('#model-preset').inputValue(), 'llama-2-70b');
  assert.deepEqual(errors, []);
  await context.close();
});

test('engine switch shows only the fields that apply', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const { page, errors } = await openPage(context);
  await page.selectOption('#engine-type', '"fsdp"');
  await page.locator('#engine-sharding_strategy').waitFor({ state: 'visible' });
  assert.equal(await page.locator('#engine-zero_stage').isVisible(), false);
  await page.selectOption('#engine-type', '"deepspeed"');
  await page.locator('#engine-zero_stage').waitFor({ state: 'visible' });
  assert.equal(await page.locator('#engine-sharding_strategy').isVisible(), false);
  assert.deepEqual(errors, []);
  await context.close();
});
