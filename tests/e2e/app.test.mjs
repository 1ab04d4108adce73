// Browser tests of the built site (dist/) in headless Chromium, served on 127.0.0.1.
// Run: (cd tests/e2e && node --test)   env: DIST (default ../../dist), BASE_PATH (default /),
// OUT_DIR for screenshots (default ../../target/e2e).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, symlinkSync, readFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch } from './browser.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DIST = path.resolve(HERE, process.env.DIST ?? '../../dist');
const BASE = process.env.BASE_PATH ?? '/';
const OUT = path.resolve(HERE, process.env.OUT_DIR ?? '../../target/e2e');
const PORT = 8100 + Math.floor(Math.random() * 800);
const ORIGIN = `http://127.0.0.1:${PORT}`;
let server, browser;

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
async function openPage(context, url = `${ORIGIN}${BASE}`) {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('response', r => { if (r.status() >= 400) errors.push(`${r.status()} ${r.url()}`); });
  await page.goto(url);
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
  assert.match(await page.locator('#model-info').textContent(), /llama: 80 layers, hidden 8192, 64 heads \/ 8 KV heads.*68\.98B parameters/);
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
  await page.waitForTimeout(100);
  assert.ok(await page.locator('#fits svg rect').count() > 8, 'which-GPUs-fit chart kept');
  assert.match(await page.locator('#solve-batch').textContent(), /max micro-batch: \d+|nothing fits/, 'solver answer kept');
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
  assert.equal(exported.schema_version, 2);
  assert.equal(exported.model.preset, 'llama-2-70b');
  assert.equal(exported.training.micro_batch_size, 2);

  // copy JSON
  await page.click('#copy');
  await page.locator('#status', { hasText: 'Copied' }).waitFor();
  const copied = JSON.parse(await page.evaluate(() => navigator.clipboard.readText()));
  assert.equal(copied.training.micro_batch_size, 2);
  // the message hides itself: 5 s and 60 ms per character (39 here: 7.3 s)
  const shownAt = Date.now();
  await page.waitForFunction(() => document.querySelector('#status').textContent === '', null, { timeout: 20000 });
  assert.ok(Date.now() - shownAt > 5000, 'the message stays long enough to read');

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
  // FSDP2 by default: its options, not FSDP1's; FSDP1's once fsdp_version says 1
  await page.locator('#engine-reshard_after_forward').waitFor({ state: 'visible' });
  assert.equal(await page.locator('#engine-sharding_strategy').isVisible(), false);
  assert.equal(await page.locator('#engine-zero_stage').isVisible(), false);
  await page.selectOption('#engine-fsdp_version', '1');
  await page.locator('#engine-sharding_strategy').waitFor({ state: 'visible' });
  assert.equal(await page.locator('#engine-reshard_after_forward').isVisible(), false);
  await page.selectOption('#engine-type', '"deepspeed"');
  await page.locator('#engine-zero_stage').waitFor({ state: 'visible' });
  assert.equal(await page.locator('#engine-sharding_strategy').isVisible(), false);
  // where a field applies is calc-core's fact (core/src/fields.rs): Megatron models
  // sequence parallelism and has no torch.optim implementation to choose; FSDP the reverse
  await page.selectOption('#engine-type', '"megatron"');
  await page.locator('#parallelism-sequence_parallel').waitFor({ state: 'visible' });
  assert.equal(await page.locator('#training-optimizer_impl').isVisible(), false);
  // torch.compile is an option of PyTorch models: not Megatron's
  assert.equal(await page.locator('#training-compile').isVisible(), false);
  // the export formats that apply are calc-core's fact (Format::applies): no ds_config.json
  // under Megatron, the Megatron-LM arguments instead
  assert.equal(await page.locator('#export-format option[value="deepspeed"]').count(), 0);
  assert.equal(await page.locator('#export-format option[value="megatron"]').count(), 1);
  await page.selectOption('#engine-type', '"fsdp"');
  await page.locator('#training-optimizer_impl').waitFor({ state: 'visible' });
  // torchao's float8 all-gather (FSDP2 under fp8): the gathered linear weights take 1 byte,
  // so ticking it lowers the total; under another precision it is a field error
  await page.selectOption('#training-precision', '"fp8"');
  await page.locator('#engine-float8_all_gather').waitFor({ state: 'visible' });
  const bf16Gathered = await gib(page, '#total-gib');
  await page.locator('#engine-float8_all_gather').check();
  await page.waitForFunction(
    before => parseFloat(document.querySelector('#total-gib').textContent) < before,
    bf16Gathered);
  await page.locator('#engine-float8_all_gather').uncheck();
  await page.waitForFunction(
    before => parseFloat(document.querySelector('#total-gib').textContent) === before,
    bf16Gathered);
  await page.selectOption('#training-precision', '"amp_bf16"');
  // without recomputation, ticking torch.compile lowers the peak (inductor recomputes
  // elementwise ops instead of saving their outputs); unticked, the eager figure is back
  await page.locator('#training-compile').waitFor({ state: 'visible' });
  const recompute = await page.inputValue('#training-activation_checkpointing');
  await page.selectOption('#training-activation_checkpointing', '"none"');
  const peakNow = () => parseFloat(document.querySelector('#peak-gib').textContent);
  await page.waitForFunction(() => !document.querySelector('.results').classList.contains('stale'));
  const eagerPeak = await gib(page, '#peak-gib');
  await page.check('#training-compile');
  await page.waitForFunction(`(${peakNow})() < ${eagerPeak}`);
  await page.uncheck('#training-compile');
  await page.waitForFunction(`(${peakNow})() === ${eagerPeak}`);
  await page.selectOption('#training-activation_checkpointing', recompute);
  // FSDP2 runs torchtitan's layouts: sequence parallelism and HSDP replicas, but no
  // expert tensor-parallel size of its own (Megatron-Core's)
  await page.locator('#parallelism-data_parallel_replicate_size').waitFor({ state: 'visible' });
  assert.equal(await page.locator('#parallelism-expert_tensor_parallel_size').isVisible(), false);
  await page.selectOption('#engine-type', '"megatron_deepspeed"');
  await page.locator('#export-format option[value="deepspeed"]').waitFor({ state: 'attached' });
  await page.locator('#engine-reduce_bucket_size').waitFor({ state: 'attached' });
  // a ds_config.json configures training: in inference mode the serving formats instead
  await page.click('#mode-inference');
  await page.locator('#export-format option[value="vllm"]').waitFor({ state: 'attached' });
  assert.equal(await page.locator('#export-format option[value="deepspeed"]').count(), 0);
  assert.equal(await page.locator('#export-format option[value="sglang"]').count(), 1);
  await page.click('#mode-training');
  await page.locator('#export-format option[value="deepspeed"]').waitFor({ state: 'attached' });
  assert.equal(await page.locator('#export-format option[value="vllm"]').count(), 0);
  // the footer says what leaves the page: only a config.json fetched from the Hub
  assert.match(await page.textContent('footer'), /not sent anywhere.*Only "Fetch".*huggingface\.co/);
  assert.deepEqual(errors, []);
  await context.close();
});

test('Hugging Face config: paste, upload, fetch by model id, each error kept apart', async () => {
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 1000 } });
  const presetFile = f => path.resolve(HERE, '../../presets/models/hf', f);
  // huggingface.co is stubbed: the test machines have no internet
  await context.route('https://huggingface.co/**', route => {
    const url = route.request().url();
    const headers = { 'access-control-allow-origin': '*' };
    if (url === 'https://huggingface.co/Qwen/Qwen2.5-0.5B/resolve/main/config.json') {
      return route.fulfill({ status: 200, headers, contentType: 'application/json', body: readFileSync(presetFile('Qwen__Qwen2.5-0.5B.json'), 'utf8') });
    }
    if (url.includes('/meta-llama/')) return route.fulfill({ status: 401, headers, body: 'Access to model is restricted' });
    if (url.includes('/nobody/')) return route.fulfill({ status: 404, headers, body: 'Repository not found' });
    return route.abort('internetdisconnected');
  });
  const { page, errors } = await openPage(context);
  await page.click('#hf-import summary');

  // paste a config: parsed, counted and used at once
  await page.fill('#hf-config-text', readFileSync(presetFile('openai-community__gpt2.json'), 'utf8'));
  await page.locator('#hf-status', { hasText: 'gpt2: 12 layers, hidden 768' }).waitFor();
  assert.match(await page.locator('#hf-status').textContent(), /124\.44M parameters/);
  await page.locator('#model-info', { hasText: '124.44M parameters' }).waitFor();
  assert.equal(await page.locator('#model-preset').inputValue(), '');

  // a partial file: the sizes it lacks are named with the LlamaConfig defaults used
  await page.fill('#hf-config-text', '{"model_type": "llama", "vocab_size": 128256, "max_position_embeddings": 8192}');
  await page.locator('#hf-status', { hasText: 'Not in the file' }).waitFor();
  assert.match(await page.locator('#hf-status').textContent(),
    /defaults were used \(as transformers does\): hidden_size = 4096, num_hidden_layers = 32, num_attention_heads = 32, intermediate_size = 11008/);
  await page.fill('#hf-config-text', readFileSync(presetFile('openai-community__gpt2.json'), 'utf8'));
  await page.locator('#hf-status', { hasText: 'gpt2: 12 layers, hidden 768' }).waitFor();
  // invalid JSON and an unsupported family: a message, the last valid model kept
  await page.fill('#hf-config-text', '{"model_type": "llama", ');
  await page.locator('#hf-error', { hasText: 'invalid JSON' }).waitFor();
  await page.fill('#hf-config-text', '{"model_type": "mamba", "hidden_size": 768}');
  await page.locator('#hf-error', { hasText: 'unsupported model family' }).waitFor();
  assert.match(await page.locator('#hf-error').textContent(), /deepseek_v3/);
  assert.match(await page.locator('#model-info').textContent(), /124\.44M parameters/);
  await page.fill('#hf-config-text', '{"model_type": "llama", "hidden_size": 4000, "num_attention_heads": 3}');
  await page.locator('#hf-error', { hasText: 'must divide hidden_size' }).waitFor();

  // fetch by model id
  await page.fill('#hf-model-id', 'Qwen/Qwen2.5-0.5B');
  await page.click('#hf-fetch');
  await page.locator('#hf-status', { hasText: '494.03M parameters' }).waitFor();
  await page.locator('#model-info', { hasText: 'Qwen/Qwen2.5-0.5B: qwen2' }).waitFor();
  await page.fill('#hf-model-id', 'meta-llama/Llama-3.1-8B');
  await page.click('#hf-fetch');
  await page.locator('#hf-error', { hasText: 'gated or private (HTTP 401)' }).waitFor();
  assert.match(await page.locator('#hf-error').textContent(), /paste or upload/);
  await page.fill('#hf-model-id', 'nobody/nothing');
  await page.click('#hf-fetch');
  await page.locator('#hf-error', { hasText: 'not found' }).waitFor();
  await page.fill('#hf-model-id', 'offline/model');
  await page.press('#hf-model-id', 'Enter');
  await page.locator('#hf-error', { hasText: 'could not reach huggingface.co' }).waitFor();
  await page.fill('#hf-model-id', '../etc/passwd');
  await page.click('#hf-fetch');
  await page.locator('#hf-error', { hasText: 'is not a model id' }).waitFor();
  assert.match(await page.locator('#model-info').textContent(), /494\.03M parameters/, 'the fetched model is kept');

  // upload a file
  await page.setInputFiles('#hf-config-file', presetFile('microsoft__phi-2.json'));
  await page.locator('#hf-status', { hasText: 'phi: 32 layers' }).waitFor();
  await page.locator('#model-info', { hasText: '2.78B parameters' }).waitFor();

  // the estimate uses it, and the export carries the config
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#export')]);
  const exported = JSON.parse(readFileSync(await dl.path(), 'utf8'));
  assert.equal(exported.model.hf_config.model_type, 'phi');
  await page.screenshot({ path: path.join(OUT, 'hf-import.png'), fullPage: true });

  // only the stubbed failures may have logged errors
  assert.deepEqual(errors.filter(e => !/huggingface\.co|ERR_INTERNET_DISCONNECTED|status of 40[14]/.test(e)), []);
  await context.close();
});

test('modes: training, LoRA fine-tuning, inference; solver answers and the sweep chart', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const { page, errors } = await openPage(context);
  await page.selectOption('#model-preset', 'llama-3.1-8b');
  // training: the inverse answers
  await page.locator('#solve-batch', { hasText: /max micro-batch: \d+/ }).waitFor();
  await page.locator('#solve-seq', { hasText: /max sequence length: \d+/ }).waitFor();
  await page.locator('#solve-gpus', { hasText: /fewest GPUs: \d+/ }).waitFor();
  assert.ok(await page.locator('#sweep svg path, #sweep svg polyline').count() > 0, 'sweep chart drawn');
  // each answer states the layout it searched ("at TP 2, DP 4") and the config layout's own
  // answer; "Use" loads the answer with its layout into the form
  const batch = await page.textContent('#solve-batch span');
  const m = batch.match(/max micro-batch: (\d+) at ((?:[A-Z]{2} \d+, )*DP (\d+)) \(this layout/);
  assert.ok(m, batch);
  await page.click('#solve-batch button.use-solution');
  await page.locator('#status', { hasText: `Loaded max micro-batch: ${m[1]}` }).waitFor();
  assert.equal(await page.inputValue('#training-micro_batch_size'), m[1]);
  const [dlSolved] = await Promise.all([page.waitForEvent('download'), page.click('#export')]);
  const solved = JSON.parse(readFileSync(await dlSolved.path(), 'utf8'));
  assert.equal(solved.training.micro_batch_size, Number(m[1]));
  assert.equal(solved.hardware.num_gpus / (solved.parallelism.tensor_parallel_size ?? 1)
    / (solved.parallelism.pipeline_parallel_size ?? 1) / (solved.parallelism.context_parallel_size ?? 1), Number(m[3]), m[2]);
  await page.locator('#verdict', { hasText: /^Fits/ }).waitFor();
  await page.click('#reset');
  await page.selectOption('#model-preset', 'llama-3.1-8b');
  // the first iteration (no optimizer states before its step), beside the steady state,
  // where activations make backward the peak; not under DeepSpeed (the default engine),
  // which creates its optimizer states at initialization
  assert.equal(await page.textContent('#first-step'), '');
  await page.selectOption('#engine-type', '"fsdp"');
  await page.fill('#training-micro_batch_size', '8');
  await page.locator('#first-step', { hasText: /First iteration: peak allocated \d+\.\d\d GiB/ }).waitFor();
  const first = Number((await page.textContent('#first-step')).match(/(\d+\.\d\d) GiB/)[1]);
  assert.ok(first < await gib(page, '#peak-gib'), 'first iteration below the steady state');
  await page.screenshot({ path: path.join(OUT, 'first-step.png'), fullPage: true });
  // fine-tuning: LoRA fields, adapter count
  await page.click('#mode-finetuning');
  assert.equal(await page.locator('#mode-finetuning').getAttribute('aria-pressed'), 'true');
  await page.locator('#training-lora-rank').waitFor({ state: 'visible' });
  // llama is in PEFT's target mapping: the field is left to PEFT's default (q_proj, v_proj)
  assert.equal(await page.inputValue('#training-lora-target_modules'), '');
  await page.fill('#training-lora-target_modules', 'q_proj, k_proj, v_proj, o_proj');
  await page.fill('#training-lora-rank', '16');
  // Llama-3.1-8B, r 16 on q, k, v, o: 13 631 488 (see core/tests/inference.rs)
  await page.locator('#trainable', { hasText: '13 631 488' }).waitFor();
  await page.fill('#training-lora-target_modules', 'qkv');
  await page.locator('#training-lora-target_modules-error', { hasText: 'matches no linear layer' }).waitFor();
  await page.fill('#training-lora-target_modules', 'all-linear');
  await page.locator('#training-lora-target_modules-error').waitFor({ state: 'hidden' });
  // inference: its fields, the training fields hidden, concurrency and context answers
  await page.click('#mode-inference');
  await page.locator('#inference-context_len').waitFor({ state: 'visible' });
  assert.equal(await page.locator('#training-micro_batch_size').isVisible(), false);
  await page.locator('#solve-concurrency', { hasText: /max concurrent sequences: \d+/ }).waitFor();
  await page.locator('#solve-context', { hasText: /max context: \d+/ }).waitFor();
  // transformers generate: its own settings; quantization settings follow the weight format
  assert.equal(await page.locator('#inference-batch_size').isVisible(), true);
  assert.equal(await page.locator('#inference-gpu_memory_utilization').isVisible(), false);
  assert.equal(await page.locator('#inference-group_size').isVisible(), false);
  await page.selectOption('#inference-weight_format', '"awq"');
  await page.locator('#inference-group_size').waitFor({ state: 'visible' });
  await page.selectOption('#inference-weight_format', '"bf16"');
  await page.selectOption('#inference-engine', '"vllm"');
  await page.locator('#inference-gpu_memory_utilization').waitFor({ state: 'visible' });
  // the vLLM release whose profiling run is modelled (0.19 by default)
  await page.locator('#inference-vllm_version').waitFor({ state: 'visible' });
  assert.equal(await page.inputValue('#inference-vllm_version'), '"0.19"');
  assert.equal(await page.locator('#inference-batch_size').isVisible(), false);
  // one length field for a serving runtime: max_model_len (the context length is
  // transformers generate's), its placeholder the length computed with
  assert.equal(await page.locator('#inference-context_len').isVisible(), false);
  assert.equal(await page.getAttribute('#inference-max_model_len', 'placeholder'), '4096');
  await page.fill('#inference-max_model_len', '16000');
  await page.locator('#verdict', { hasText: 'maximum concurrency for 16000 tokens per request' }).waitFor();
  // one verdict: the concurrency solver answers the headline's figure, whole requests
  const headline = parseFloat((await page.textContent('#verdict')).match(/per request: ([\d.]+)x/)[1]);
  await page.locator('#solve-concurrency', { hasText: `max concurrent sequences: ${Math.floor(headline)} of 16000 tokens each` }).waitFor();
  // the longest context stops at the model's positions (Llama-3.1-8B: 131072)
  await page.locator('#solve-context', { hasText: /max context: \d+/ }).waitFor();
  const longest = parseInt((await page.textContent('#solve-context')).match(/max context: (\d+)/)[1], 10);
  assert.ok(longest <= 131072, `${longest}`);
  // the GPU select names the capacity the verdict uses (CUDA's total: 79.18 GiB on an H100)
  assert.match(await page.locator('#hardware-gpu option:checked').textContent(), /\(79\.18 GiB\)/);
  assert.match(await page.textContent('#breakdown'), /GPU memory\s*79\.18/);
  // the sweep: what one request needs against the runtime's budget, as the caption says
  await page.locator('#sweep-caption', { hasText: 'one request of max_model_len tokens needs' }).waitFor();
  assert.match(await page.textContent('#sweep-caption'), /one request of max_model_len tokens needs/);
  await page.screenshot({ path: path.join(OUT, 'inference.png'), fullPage: true });
  // SGLang: its static fraction and prefill chunk instead of vLLM's settings; the verdict
  // is its token pool
  await page.selectOption('#inference-engine', '"sglang"');
  await page.locator('#inference-mem_fraction_static').waitFor({ state: 'visible' });
  assert.equal(await page.locator('#inference-chunked_prefill_size').isVisible(), true);
  assert.equal(await page.locator('#inference-gpu_memory_utilization').isVisible(), false);
  assert.equal(await page.locator('#inference-max_model_len').isVisible(), true);
  await page.fill('#inference-mem_fraction_static', '0.85');
  await page.locator('#verdict', { hasText: 'mem_fraction_static 0.85' }).waitFor();
  assert.match(await page.textContent('#verdict'), /^Serves: KV pool \d+ tokens/);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: path.join(OUT, 'inference-sglang-phone.png'), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 1000 });
  await page.click('#mode-training');
  await page.locator('#training-micro_batch_size').waitFor({ state: 'visible' });
  assert.deepEqual(errors, []);
  await context.close();
});

test('how accurate is this: suite error, nearest measured runs, the user\'s own measurement', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const { page, errors } = await openPage(context);
  await page.selectOption('#model-preset', 'llama-3.2-1b');
  await page.click('#accuracy summary');
  // the suite's statistics: peak, activations, optimizer states, each a percentage (the
  // panel is built when it opens: the toggle event comes after the click)
  const rows = page.locator('#accuracy-summary tbody tr');
  await rows.first().waitFor();
  assert.equal(await rows.count(), 3);
  assert.match(await rows.nth(0).textContent(), /peak allocated\s*\d+\s*\d+\.\d %\s*\d+\.\d %/);
  // the nearest measured runs are of the chosen model
  await page.locator('#nearest tbody tr', { hasText: 'llama-3.2-1b' }).first().waitFor();
  assert.equal(await page.locator('#nearest tbody tr').count(), 3);
  // a bad calibration is an error at the field, nothing applied
  await page.fill('#calibration', 'usage: 3 GiB');
  await page.locator('#calibration-error', { hasText: 'unknown name' }).waitFor();
  assert.equal(await page.locator('#calibration').getAttribute('aria-invalid'), 'true');
  // torch.cuda numbers: compared side by side; the implied reserve goes into the config
  await page.fill('#calibration', 'max_memory_allocated: 20 GiB\nmax_memory_reserved: 22 GiB');
  assert.equal(await page.locator('#calibration').getAttribute('aria-invalid'), 'false');
  await page.locator('#calibration-table tbody tr', { hasText: 'max_memory_allocated' }).waitFor();
  await page.locator('#calibration-table tbody tr', { hasText: 'max_memory_reserved' }).waitFor();
  await page.click('#apply-calibration');
  // (22 - 20) / 20 = 0.1
  assert.equal(await page.inputValue('#overheads-allocator_reserve_fraction'), '0.1');
  await page.locator('#accuracy').screenshot({ path: path.join(OUT, 'accuracy.png') });
  // kept in this browser: the text survives a reload, and so does the applied overhead
  await page.reload();
  await page.locator('#verdict').waitFor();
  await page.click('#accuracy summary');
  await page.locator('#calibration').waitFor();
  assert.equal(await page.inputValue('#calibration'), 'max_memory_allocated: 20 GiB\nmax_memory_reserved: 22 GiB');
  assert.equal(await page.inputValue('#overheads-allocator_reserve_fraction'), '0.1');
  assert.deepEqual(errors, []);
  await context.close();
  // the suite cannot be fetched (never cached, server unreachable): the panel says so, and
  // the user's own measurement still works
  const cut = await browser.newContext({ viewport: { width: 1280, height: 1000 }, serviceWorkers: 'block' });
  await cut.route('**/dist_records.jsonl', route => route.abort('internetdisconnected'));
  const { page: p2 } = await openPage(cut);
  await p2.click('#accuracy summary');
  await p2.locator('#accuracy-error', { hasText: 'dist_records.jsonl: offline' }).waitFor();
  await p2.fill('#calibration', 'max_memory_allocated: 20 GiB');
  await p2.locator('#calibration-table tbody tr', { hasText: 'max_memory_allocated' }).waitFor();
  await cut.close();
});

test('state: a link reproduces the page; bad links and imports are rejected, nothing saved lost', async () => {
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 1000 } });
  const { page, errors } = await openPage(context);
  await page.selectOption('#model-preset', 'qwen2.5-7b');
  await page.fill('#training-micro_batch_size', '3');
  // the link follows the document (100 ms after the last change)
  await page.waitForFunction(() => location.hash.startsWith('#c=1.') &&
    JSON.parse(atob(location.hash.slice(5).replace(/-/g, '+').replace(/_/g, '/'))).training?.micro_batch_size === 3);
  const total = await gib(page, '#total-gib');
  const link = await page.evaluate(() => location.href);

  // the link in a fresh browser profile (nothing saved) shows the same config and numbers
  const fresh = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const p2 = await fresh.newPage();
  await p2.goto(link);
  await p2.locator('#status', { hasText: 'Loaded the configuration from the link' }).waitFor();
  assert.equal(await p2.inputValue('#training-micro_batch_size'), '3');
  assert.equal(await p2.inputValue('#model-preset'), 'qwen2.5-7b');
  assert.equal(await gib(p2, '#total-gib'), total);
  await fresh.close();

  // corrupt and hostile links: a message, and the saved configuration stays
  const enc = s => Buffer.from(s).toString('base64url');
  for (const [hash, why] of [
    ['#c=1.%%%', 'corrupt'],
    ['#c=7.abc', 'version'],
    [`#c=1.${enc('{"model": {"preset": "<script>alert(1)</script>"}}')}`, 'preset'],
    [`#c=1.${enc('{"schema_version": 1, "training": {"micro_batch_size": 1e300}}')}`, 'micro_batch_size'],
  ]) {
    await page.goto('about:blank');  // a new document, not a same-page hash change
    await page.goto(`${ORIGIN}${BASE}${hash}`);
    await page.locator('#status', { hasText: 'rejected' }).waitFor();
    assert.match(await page.locator('#status').textContent(), new RegExp(why));
    assert.equal(await page.inputValue('#training-micro_batch_size'), '3');
    assert.equal(await page.inputValue('#model-preset'), 'qwen2.5-7b');
  }
  assert.equal(await page.evaluate(() => document.querySelectorAll('script:not([type]), script[type=module]').length), 2, 'no script injected');

  // import: hostile text is rejected at the field; a seed-format file is migrated
  await page.click('#import summary');
  await page.fill('#import-text', '{"model": {"preset": "llama-3.1-8b"}, "training": {"micro_batch_size": "lots"}}');
  await page.click('#import-apply');
  await page.locator('#import-error', { hasText: 'micro_batch_size' }).waitFor();
  assert.equal(await page.locator('#import-text').getAttribute('aria-invalid'), 'true');
  assert.equal(await page.inputValue('#training-micro_batch_size'), '3');
  // text that is neither our config nor another tool's file: calc-core (in the formats
  // worker) says which files it recognises
  await page.fill('#import-text', 'not json at all');
  await page.click('#import-apply');
  await page.locator('#import-error', { hasText: 'recognised: DeepSpeed ds_config.json' }).waitFor();
  assert.equal(await page.inputValue('#training-micro_batch_size'), '3');
  await page.setInputFiles('#import-file', path.resolve(HERE, '../../presets/examples/llama2_7b_deepspeed.json'));
  await page.locator('#status', { hasText: 'Imported the configuration from llama2_7b_deepspeed.json' }).waitFor();
  assert.equal(await page.inputValue('#training-micro_batch_size'), '4');
  assert.equal(await page.locator('#import-error').textContent(), '');

  // ds_config.json for the DeepSpeed engine (the imported example is ZeRO-3 with CPU offload)
  await page.selectOption('#export-format', 'deepspeed');
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#export-tool')]);
  assert.equal(dl.suggestedFilename(), 'ds_config.json');
  const ds = JSON.parse(readFileSync(await dl.path(), 'utf8'));
  assert.equal(ds.zero_optimization.stage, 3);
  assert.equal(ds.zero_optimization.offload_optimizer.device, 'cpu');
  assert.equal(ds.train_batch_size, 4 * 4 * 8);
  await page.selectOption('#engine-type', '"fsdp"');
  await page.locator('#export-format option[value="deepspeed"]').waitFor({ state: 'detached' });
  assert.deepEqual(errors, []);
  await context.close();
});

test("framework files: import recognises the tool and reports each key; export writes each format", async () => {
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 1000 } });
  const { page, errors } = await openPage(context);
  const fixture = f => path.resolve(HERE, '../../tests/fixtures/formats', f);
  await page.click('#import summary');
  // accelerate's FSDP example (tests/fixtures/formats/SOURCES.md), read over the page's
  // Llama-3.1-8B: calc-core in the formats worker recognises it and reports the mapping
  await page.setInputFiles('#import-file', fixture('accelerate_fsdp.yaml'));
  await page.locator('#import-recognised', { hasText: 'accelerate config (YAML)' }).waitFor();
  await page.locator('#status', { hasText: 'Imported accelerate config (YAML) from accelerate_fsdp.yaml' }).waitFor();
  assert.equal(await page.inputValue('#engine-type'), '"fsdp"');
  assert.equal(await page.inputValue('#engine-sharding_strategy'), '"FULL_SHARD"');
  assert.equal(await page.inputValue('#hardware-num_gpus'), '2');
  assert.equal(await page.inputValue('#model-preset'), 'llama-3.1-8b', 'the model is kept from the page');
  const row = page.locator('#import-report tr', { hasText: 'num_processes' });
  assert.match(await row.textContent(), /num_processes.*2.*hardware\.num_gpus.*2/);
  assert.match(await page.textContent('#import-ignored'), /fsdp_backward_prefetch/);
  assert.match(await page.textContent('#import-from-base'), /model/);
  const total = await page.textContent('#total-gib');

  // export as accelerate: the file re-imports to the same estimate (calc-core verifies it)
  await page.selectOption('#export-format', 'accelerate');
  const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#export-tool')]);
  assert.equal(dl.suggestedFilename(), 'accelerate_config.yaml');
  const yaml = readFileSync(await dl.path(), 'utf8');
  assert.match(yaml, /distributed_type: FSDP/);
  assert.match(yaml, /num_processes: 2/);
  await page.locator('#status', { hasText: 'Exported accelerate_config.yaml' }).waitFor();
  await page.fill('#import-text', yaml);
  await page.click('#import-apply');
  await page.locator('#import-recognised', { hasText: 'accelerate' }).waitFor();
  assert.equal(await page.textContent('#total-gib'), total, 'export then import keeps the estimate');

  // a format that cannot express the plan says which key: torchtitan runs FSDP2 only
  await page.selectOption('#export-format', 'torchtitan');
  await page.click('#export-tool');
  await page.locator('#status', { hasText: 'No torchtitan.toml' }).waitFor();
  assert.match(await page.textContent('#status'), /engine.*torchtitan runs FSDP2/);

  // a pasted vllm serve line: inference mode, the serving formats offered for export
  await page.fill('#import-text', 'vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2 --max-model-len 8192');
  await page.click('#import-apply');
  await page.locator('#import-recognised', { hasText: 'vllm serve command line' }).waitFor();
  assert.equal(await page.getAttribute('#mode-inference', 'aria-pressed'), 'true');
  await page.locator('#export-format option[value="vllm"]').waitFor({ state: 'attached' });
  assert.equal(await page.locator('#export-format option[value="accelerate"]').count(), 0);
  await page.screenshot({ path: path.join(OUT, 'import-report.png'), fullPage: true });

  // a value we cannot represent is refused at the file's key; the page is unchanged
  await page.fill('#import-text', '{"zero_optimization": {"stage": 7}}');
  await page.click('#import-apply');
  await page.locator('#import-error', { hasText: 'zero_optimization.stage' }).waitFor();
  assert.equal(await page.getAttribute('#mode-inference', 'aria-pressed'), 'true');
  assert.deepEqual(errors, []);
  await context.close();
});

/** Every visible form field against the exported JSON (what calc-core computes with): a
 * text field shows the value or, where the document leaves it out, the default as its
 * placeholder; a key the export leaves out (auto / none) is an empty field, an unchecked box
 * or the "default" option. Returns the differences. */
async function formVersusExport(page) {
  await page.waitForTimeout(150);  // the export follows the document at once; settle the page
  await page.evaluate(() => navigator.clipboard.writeText('-'));
  await page.click('#copy');
  await page.waitForFunction(() => navigator.clipboard.readText().then(t => t !== '-'));
  const doc = JSON.parse(await page.evaluate(() => navigator.clipboard.readText()));
  const shown = await page.evaluate(() => [...document.querySelectorAll('section.inputs input, section.inputs select')]
    .filter(e => e.offsetParent !== null && e.id && !e.id.startsWith('hf-') && e.type !== 'file')
    .map(e => ({ id: e.id, type: e.type, value: e.type === 'checkbox' ? e.checked : (e.value === '' && e.tagName === 'INPUT' ? e.placeholder : e.value) })));
  const at = (o, p) => p.split('.').reduce((c, k) => c == null ? undefined : c[k], o);
  const diffs = [];
  for (const f of shown) {
    const want = at(doc, f.id.replace(/-/g, '.'));
    let got = f.value;
    // a select always shows one of its options (an empty value: none matched)
    if (f.type === 'select-one' && !['model-preset', 'hardware-gpu'].includes(f.id)) got = got === '' ? '(none)' : JSON.parse(got);
    const same = want === undefined
      // left out of the export: auto / none / the unwritten default option / the GPU the
      // estimate used
      ? [null, false, '', 'preset size'].includes(got) || (f.type === 'select-one' && got !== '(none)')
        // the node's CPU memory the GPU preset implies (as the GPU select shows the GPU used)
        || (f.id === 'hardware-cpu_memory_gb' && /^\d+GiB$/.test(got))
      : JSON.stringify(got) === JSON.stringify(want) || String(want) === got
        || (Array.isArray(want) && want.join(', ') === got);
    if (!same) diffs.push(`${f.id}: shows ${JSON.stringify(got)}, computed ${JSON.stringify(want)}`);
  }
  assert.ok(shown.length > 15, `${shown.length} fields`);
  return diffs;
}

test('one source of truth: the form shows what is computed after import, reset, links, switches and reload', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: ORIGIN });
  const { page, errors } = await openPage(context);
  const same = async what => assert.deepEqual(await formVersusExport(page), [], what);
  await same('first visit');
  // typed values, then an import: the fields show the imported document
  await page.fill('#training-micro_batch_size', '3');
  await page.fill('#training-seq_len', '8192');
  await page.click('#import summary');
  await page.fill('#import-text', '{"schema_version":2,"model":{"preset":"llama-3.1-8b"},"training":{"micro_batch_size":2,"seq_len":1024},"engine":{"type":"fsdp"},"hardware":{"num_gpus":4}}');
  await page.click('#import-apply');
  assert.equal(await page.inputValue('#training-micro_batch_size'), '2');
  assert.equal(await page.inputValue('#training-seq_len'), '1024');
  assert.equal(await page.inputValue('#hardware-gpu'), 'h100-80gb', 'the GPU used, not "Custom size"');
  await same('import');
  await page.fill('#training-micro_batch_size', '5');
  await page.click('#reset');
  assert.equal(await page.inputValue('#training-micro_batch_size'), '1');
  await same('reset');
  // modes: LoRA rank, alpha, targets show calc-core's defaults
  await page.click('#mode-finetuning');
  assert.equal(await page.inputValue('#training-lora-rank'), '8');
  await same('fine-tuning');
  await page.click('#mode-inference');
  await page.locator('#verdict', { hasText: /Fits|Does not fit|Serves/ }).waitFor();
  assert.equal(await page.locator('section.results.stale').count(), 0, 'a training engine left behind does not block inference');
  await same('inference');
  await page.click('#mode-training');
  await page.click('#mode-training');
  await page.selectOption('#engine-type', '"megatron"');
  await same('engine switch');
  await page.selectOption('#model-preset', 'llama-2-70b');
  await same('preset');
  // a hidden field never blocks: TP 2 under Megatron, then DDP (TP hidden)
  await page.fill('#parallelism-tensor_parallel_size', '2');
  await page.selectOption('#engine-type', '"ddp"');
  await page.locator('#parallelism-tensor_parallel_size').waitFor({ state: 'hidden' });
  await page.locator('#verdict', { hasText: /Fits|Does not fit/ }).waitFor();
  assert.equal(await page.locator('section.results.stale').count(), 0);
  await same('engine switch with a hidden value');
  // every unparseable field at once; a number beyond the range says so
  await page.fill('#training-micro_batch_size', 'lots');
  await page.fill('#training-seq_len', 'long');
  await page.locator('#training-seq_len-error', { hasText: 'long' }).waitFor();
  assert.equal(await page.locator('#training-micro_batch_size').getAttribute('aria-invalid'), 'true');
  await page.fill('#training-micro_batch_size', '1');
  await page.fill('#training-seq_len', '1e30');
  await page.locator('#training-seq_len-error', { hasText: 'must be a whole number from 1 to' }).waitFor();
  // an invalid edit is kept in the page, never saved or linked: after a reload the last
  // valid configuration, and a message that says so
  await page.fill('#training-seq_len', '2048');
  await page.waitForFunction(() => JSON.parse(localStorage.getItem('gpu-mem-calc.config.v1')).training.seq_len === 2048);
  const link = page.url();
  await page.fill('#hardware-num_gpus', '0');
  await page.waitForFunction(() => localStorage.getItem('gpu-mem-calc.draft.v1') !== null);
  assert.equal(page.url(), link, 'the link keeps the last valid configuration');
  await page.reload();
  await page.locator('#status', { hasText: 'Your last edit was invalid and was not saved' }).waitFor();
  assert.equal(await page.inputValue('#hardware-num_gpus'), '8');
  assert.equal(await page.inputValue('#training-seq_len'), '2048');
  await same('reload');
  // a link pasted into the open page (only the fragment changes) loads
  await page.fill('#training-seq_len', '555');
  const other = new URL(link);
  other.hash = '#c=1.' + Buffer.from(JSON.stringify({ schema_version: 2, model: { preset: 'qwen2.5-7b' }, training: { seq_len: 3072 } })).toString('base64url');
  await page.evaluate(h => { location.hash = h; }, other.hash);
  await page.locator('#status', { hasText: 'Loaded the configuration from the link' }).waitFor();
  assert.equal(await page.inputValue('#training-seq_len'), '3072');
  assert.equal(await page.inputValue('#model-preset'), 'qwen2.5-7b');
  await same('link');
  assert.deepEqual(errors, []);
  await context.close();
});

test('CPU memory: a card of its own when states are offloaded, checked against the node', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const { page, errors } = await openPage(context);
  // nothing offloaded: no card
  assert.equal(await page.locator('#cpu-memory').isVisible(), false);
  // Llama-3.1-70B, ZeRO-3 with the optimizer offloaded to CPU on 8 H100s
  await page.click('#import summary');
  await page.fill('#import-text', JSON.stringify({ schema_version: 2, model: { preset: 'llama-3.1-70b' },
    training: { seq_len: 4096, activation_checkpointing: 'full' },
    engine: { type: 'deepspeed', zero_stage: 3, offload_optimizer: 'cpu' }, hardware: { num_gpus: 8, gpu: 'h100-80gb' } }));
  await page.click('#import-apply');
  await page.locator('#cpu-memory').waitFor({ state: 'visible' });
  // DeepSpeed's estimate_zero3_model_states_mem_needs on one node: 16 B x 70 553 706 496
  // params x 1.5 = 1577.00 GiB per node, / 8 GPUs = 197.12 GiB per GPU; DGX H100: 2 TB
  const card = await page.textContent('#cpu-memory');
  assert.match(card, /1577\.00 GiB per node \(197\.12 GiB per GPU, 8 GPUs on the node\) of the node's 2048\.00 GiB: fits/);
  assert.match(card, /16 B × 70553706496 params/, 'the formula');
  assert.equal(await page.getAttribute('#hardware-cpu_memory_gb', 'placeholder'), '2048GiB');
  await page.locator('#verdict', { hasText: /^Fits/ }).waitFor();
  // a node with 512 GB: the verdict says the CPU memory is what does not fit
  await page.fill('#hardware-cpu_memory_gb', '512');
  await page.locator('#verdict', { hasText: 'Does not fit in CPU memory: the offloaded states need 1577.00 GiB per node and the node has 476.84 GiB' }).waitFor();
  assert.match(await page.textContent('#cpu-memory-verdict'), /does not fit/);
  await page.locator('#cpu-memory').screenshot({ path: path.join(OUT, 'cpu-memory.png') });
  await page.setViewportSize({ width: 390, height: 844 });
  assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), 390, 'no sideways scroll on a phone');
  await page.locator('#cpu-memory').screenshot({ path: path.join(OUT, 'cpu-memory-phone.png') });
  // out of range: the field says so
  await page.fill('#hardware-cpu_memory_gb', '0');
  await page.locator('#hardware-cpu_memory_gb-error', { hasText: 'must be more than 0 and at most 1000000 GB' }).waitFor();
  assert.deepEqual(errors, []);
  await context.close();
});

test('explain rows, which GPUs fit, keyboard use, dark and mobile layouts', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 }, colorScheme: 'dark' });
  const { page, errors } = await openPage(context);
  // each component row opens its formula and source, computed by calc-core
  const row = page.locator('#breakdown tr[data-component="optimizer_states"] details');
  await row.locator('summary').click();
  await row.locator('.formula').waitFor();
  assert.match(await row.locator('.source').textContent(), /Source: .+/);
  // the formula is the term that computed the bytes: ZeRO-3 on 8 GPUs shards Llama-3.1-8B's
  // AdamW states, 2 states x 4 B x 8 030 261 248 params / 8 ranks
  assert.equal(await row.locator('.formula').textContent(), '2 states × 4 B × 8030261248 params / 8 data-parallel ranks');
  // which GPUs fit: one bar per preset, each labelled (drawn one task after the estimate)
  await page.locator('#fits svg').waitFor();
  const presets = JSON.parse(readFileSync(path.resolve(HERE, '../../presets/gpus.json'), 'utf8')).gpus;
  assert.ok(presets.length >= 8, `${presets.length} GPU presets`);
  assert.equal(await page.locator('#fits svg text', { hasText: /[✓✗] / }).count(), presets.length);
  // keyboard: focus the micro-batch field by Tab order from the preset select and type
  await page.focus('#model-preset');
  await page.keyboard.press('ArrowDown');
  await page.locator('#training-micro_batch_size').focus();
  await page.keyboard.press('Control+A');
  await page.keyboard.type('0');
  const err = page.locator('#training-micro_batch_size-error');
  await err.waitFor();
  const described = await page.locator('#training-micro_batch_size').getAttribute('aria-describedby');
  assert.ok(described.split(' ').includes('training-micro_batch_size-error'), described);
  assert.equal(await page.locator('#training-micro_batch_size').getAttribute('aria-invalid'), 'true');
  await page.keyboard.press('Backspace');
  await page.keyboard.type('1');
  await err.waitFor({ state: 'hidden' });
  await page.screenshot({ path: path.join(OUT, 'dark.png'), fullPage: true });
  await context.close();
  // a phone: one column, nothing wider than the screen
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const { page: m, errors: e2 } = await openPage(phone);
  const overflow = await m.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `page wider than the phone by ${overflow}px`);
  await m.screenshot({ path: path.join(OUT, 'mobile.png'), fullPage: true });
  assert.deepEqual([...errors, ...e2], []);
  await phone.close();
});

test('phone: the verdict stays in view, the charts are drawn for the width with readable text', async () => {
  const H = 844;
  const phone = await browser.newContext({ viewport: { width: 390, height: H }, isMobile: true, hasTouch: true });
  const { page, errors } = await openPage(phone);
  const inView = async (sel) => {
    const r = await page.locator(sel).boundingBox();
    return r !== null && r.y >= 0 && r.y + r.height <= H;
  };
  // the summary bar: in view at load, saying what the headline says (same verdict, same total)
  await page.locator('#summary-verdict', { hasText: /^Fits: / }).waitFor();
  assert.ok(await inView('#summary'), 'summary visible without scrolling');
  const verdict = await page.textContent('#verdict');
  const total = verdict.match(/^Fits: ([\d.]+ GiB) of ([\d.]+ GiB) per GPU/);
  assert.ok(total, verdict);
  assert.match(await page.textContent('#summary-verdict'), new RegExp(`^Fits: ${total[1]} of ${total[2]} per GPU, [\\d.]+ GiB free`));
  const box = await page.locator('#summary').boundingBox();
  assert.ok(box.height <= 0.12 * H, `summary is compact: ${box.height}px`);
  await page.screenshot({ path: path.join(OUT, 'phone-top.png') });
  // deep in the form, editing: the summary stays at the top and follows the edit
  await page.locator('#training-micro_batch_size').scrollIntoViewIfNeeded();
  await page.fill('#training-micro_batch_size', '16');
  await page.locator('#summary-verdict', { hasText: /^Does not fit: / }).waitFor();
  assert.ok(await page.evaluate(() => window.scrollY) > 300, 'scrolled into the form');
  assert.equal(await inView('#verdict'), false, 'the results are out of view, below the form');
  const r = await page.locator('#summary').boundingBox();
  assert.ok(r.y >= 0 && r.y < 2, `summary sticks to the top: y = ${r.y}`);
  assert.match(await page.textContent('#verdict'), /^Does not fit: needs/);
  await page.screenshot({ path: path.join(OUT, 'phone-form.png') });
  // a tap on it goes to the results: the full verdict is then in view
  await page.locator('#summary').tap();
  await page.waitForFunction(() => location.hash.startsWith('#') && document.querySelector('#verdict').getBoundingClientRect().top >= 0);
  assert.ok(await inView('#verdict'), 'the results are in view after a tap');
  await page.fill('#training-micro_batch_size', '1');
  await page.locator('#summary-verdict', { hasText: /^Fits: / }).waitFor();
  // the charts: drawn at their container's width, every text at least 11 px as rendered
  await page.locator('#fits svg').waitFor();
  await page.locator('#sweep svg').waitFor();
  const charts = await page.evaluate(() => ['chart', 'fits', 'sweep'].map(id => {
    const svg = document.querySelector(`#${id} svg`);
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    const sizes = [...svg.querySelectorAll('text')].map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
    return { id, scale, width: svg.getBoundingClientRect().width, box: svg.parentElement.clientWidth, texts: sizes.length, min: Math.min(...sizes) };
  }));
  for (const c of charts) {
    assert.ok(c.texts > 5, `${c.id}: ${c.texts} texts`);
    assert.ok(Math.abs(c.scale - 1) < 0.01, `${c.id} drawn for its width, not scaled: ${c.scale}`);
    assert.ok(c.width <= c.box + 0.5, `${c.id} fits its container: ${c.width} > ${c.box}`);
    assert.ok(c.min >= 11, `${c.id}: smallest text ${c.min.toFixed(1)} px as rendered`);
  }
  await page.locator('#chart').scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(OUT, 'phone-charts.png') });
  await page.locator('#fits').screenshot({ path: path.join(OUT, 'phone-fits.png') });
  // turned sideways, the charts are drawn again for the new width
  await page.setViewportSize({ width: 844, height: 390 });
  const portrait = charts[0].width;
  await page.waitForFunction((w) => {
    const drawn = Number(document.querySelector('#chart svg').getAttribute('width'));
    return drawn !== Math.round(w) && drawn === Math.min(720, document.querySelector('#chart').clientWidth);
  }, portrait);
  // a wide screen has no summary bar: the results column itself stays in view
  const desktop = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const { page: d, errors: e2 } = await openPage(desktop);
  assert.equal(await d.locator('#summary').isVisible(), false);
  assert.deepEqual([...errors, ...e2], []);
  await desktop.close();
  await phone.close();
});

test('fine-tuning a model PEFT has no default targets for starts from all-linear, estimated at once', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const { page, errors } = await openPage(context);
  await page.selectOption('#model-preset', 'phi-3-mini-4k-instruct');
  await page.locator('#model-info', { hasText: 'phi3' }).waitFor();
  await page.click('#mode-finetuning');
  assert.equal(await page.inputValue('#training-lora-target_modules'), 'all-linear');
  // Phi-3-mini, r 8 on every linear layer of its 32 layers: qkv_proj 8 x (3072 + 9216),
  // o_proj 8 x (3072 + 3072), gate_up_proj 8 x (3072 + 16384), down_proj 8 x (8192 + 3072)
  // = 393 216 per layer, 12 582 912 in all
  await page.locator('#trainable', { hasText: '12 582 912' }).waitFor();
  assert.equal(await page.locator('#training-lora-target_modules-error').isVisible(), false);
  assert.equal(await page.locator('section.results.stale').count(), 0, 'a fine-tuning estimate, not the last training one');
  assert.deepEqual(errors, []);
  await context.close();
});

test('plan search: ranked layouts, sortable, the form\'s layout placed, use this plan', async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const { page, errors } = await openPage(context);
  await page.selectOption('#model-preset', 'llama-3.1-70b');
  await page.locator('#model-info', { hasText: 'Llama-3.1-70B' }).waitFor();
  await page.locator('#plan summary').click();
  // 70B with full-precision Adam states on the form's 8 GPUs: nothing fits (16 B/param x 70.6B
  // / 8 GPUs = 141 GB of states alone, even fully sharded)
  await page.locator('#plan-message', { hasText: 'no layout of the' }).waitFor({ timeout: 30000 });
  await page.fill('#plan-gpus', '64');
  await page.locator('#plan-table tbody tr').nth(9).waitFor({ timeout: 30000 });
  assert.equal(await page.locator('#plan-table tbody tr').count(), 10);
  const column = async (i) => (await page.locator(`#plan-table tbody tr td:nth-child(${i})`).allTextContents()).map(parseFloat);
  // ranked by step time: ranks 1..10, step times ascending, every plan leaves >= 5 % of 80 GiB
  assert.deepEqual(await column(1), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  const steps = await column(5);
  assert.deepEqual(steps, [...steps].sort((a, b) => a - b));
  for (const h of await column(4)) assert.ok(h >= 0.05 * 79.2, `headroom ${h} GiB`);
  // the form's own layout (DP 8 on 8 GPUs, which does not fit) is placed among them
  assert.match(await page.locator('#plan-current').textContent(), /Your layout \(TP 1, PP 1, DP 8.*does not fit/);
  // sorting by memory per GPU, then back
  await page.locator('#plan-table button.sort[data-column="GiB/GPU"]').click();
  const mem = await column(3);
  assert.deepEqual(mem, [...mem].sort((a, b) => a - b));
  assert.equal(await page.locator('#plan-table th[aria-sort="ascending"] button').textContent(), 'GiB/GPU');
  await page.locator('#plan-table button.sort[data-column="GiB/GPU"]').click();
  const memDown = await column(3);
  assert.deepEqual(memDown, [...memDown].sort((a, b) => b - a));
  await page.locator('#plan-table button.sort[data-column="#"]').click();
  // use the fastest plan: the form takes its layout and the plan panel ranks it first
  const first = page.locator('#plan-table tbody tr[data-rank="1"]');
  const summary = await first.locator('.plan-summary').textContent();
  await first.locator('button.use-plan').click();
  await page.locator('#status', { hasText: `Loaded plan 1: ${summary}` }).waitFor();
  // the message is seen where the button was: a bar inside the window, not at the end of
  // the results panel
  const inView = async (height) => {
    const box = await page.locator('#status').boundingBox();
    return box.y >= 0 && box.y + box.height <= height;
  };
  assert.ok(await inView(1000), 'status message inside the window');
  assert.equal(await page.locator('#hardware-num_gpus').inputValue(), '64');
  await page.locator('#plan-current', { hasText: 'it would rank 1 of the 10 listed' }).waitFor({ timeout: 30000 });
  assert.doesNotMatch(await page.locator('#plan-current').textContent(), /does not fit/);
  await page.locator('#verdict', { hasText: 'Fits' }).waitFor();
  await page.locator('#plan').screenshot({ path: path.join(OUT, 'plan.png') });
  await page.setViewportSize({ width: 390, height: 844 });
  assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), 390, 'no sideways scroll on a phone');
  await page.locator('#plan').screenshot({ path: path.join(OUT, 'plan-phone.png') });
  // on a phone too, far down the page: the second plan's message, dismissed by its button
  await page.locator('#plan-table tbody tr[data-rank="2"] button.use-plan').click();
  await page.locator('#status', { hasText: 'Loaded plan 2: ' }).waitFor();
  assert.ok(await page.evaluate(() => scrollY) > 844, 'the plan table is below the first screen');
  assert.ok(await inView(844), 'status message inside a phone\'s window');
  await page.screenshot({ path: path.join(OUT, 'status-phone.png') });
  await page.locator('.toast-close').click();
  assert.equal(await page.locator('#status').textContent(), '');
  await page.setViewportSize({ width: 1280, height: 1000 });
  // what the search may choose: FSDP only, full recomputation only (core's choices listed)
  const engines = page.locator('#plan-engines input[type="checkbox"]');
  assert.equal(await engines.count(), 5);
  for (const v of ['ddp', 'deepspeed', 'megatron', 'megatron_deepspeed']) {
    await page.locator(`#plan-engines input[value="${v}"]`).uncheck();
  }
  for (const v of ['none', 'selective', 'selective_op']) {
    await page.locator(`#plan-recompute input[value="${v}"]`).uncheck();
  }
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll('#plan-table .plan-summary')].map(td => td.textContent);
    return rows.length > 0 && rows.every(t => t.startsWith('FSDP2') && t.includes('full recomputation'));
  }, null, { timeout: 30000 });
  // nothing allowed: core's field error, said in the panel
  await page.locator('#plan-engines input[value="fsdp"]').uncheck();
  await page.locator('#plan-message', { hasText: 'engines: must allow at least one engine' }).waitFor();
  await page.locator('#plan-engines input[value="fsdp"]').check();
  await page.locator('#plan-table tbody tr').first().waitFor();
  await page.locator('#plan').screenshot({ path: path.join(OUT, 'plan-choices.png') });
  // the panel's inputs are part of the link: opened elsewhere, the panel opens with them
  // (64 GPUs, FSDP only, full recomputation only) and lists the same plans
  const firstRow = await page.locator('#plan-table tbody tr .plan-summary').first().textContent();
  await page.waitForFunction(() => location.hash.includes('&p='));
  const link = await page.evaluate(() => location.href);
  const other = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const { page: page2, errors: errors2 } = await openPage(other, link);
  assert.equal(await page2.locator('#plan').evaluate(d => d.open), true);
  assert.equal(await page2.inputValue('#plan-gpus'), '64');
  const checked = async (id) => page2.evaluate((id) => [...document.querySelectorAll(`#${id} input:checked`)].map(i => i.value), id);
  assert.deepEqual(await checked('plan-engines'), ['fsdp']);
  assert.deepEqual(await checked('plan-recompute'), ['full']);
  await page2.locator('#plan-table tbody tr').first().waitFor({ timeout: 30000 });
  assert.equal(await page2.locator('#plan-table tbody tr .plan-summary').first().textContent(), firstRow);
  // and a reload of the page keeps them (saved beside the configuration)
  await page.reload();
  assert.equal(await page.inputValue('#plan-gpus'), '64');
  assert.deepEqual(errors2, []);
  await other.close();
  assert.deepEqual(errors, []);
  await context.close();
});

test('offline: after one visit the app loads with the server gone', async () => {
  const port = PORT + 1;
  const origin = `http://127.0.0.1:${port}`;
  let root = DIST;
  if (BASE !== '/') {
    root = mkdtempSync(path.join(tmpdir(), 'site-'));
    symlinkSync(DIST, path.join(root, BASE.replace(/^\/|\/$/g, '')));
  }
  const srv = spawn('python3', ['-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', root], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    try { await fetch(`${origin}${BASE}`); break; } catch { await new Promise(r => setTimeout(r, 100)); }
  }
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${origin}${BASE}`);
  await page.locator('#verdict').waitFor();
  await page.evaluate(async () => { await navigator.serviceWorker.ready; });
  srv.kill();
  await new Promise(r => setTimeout(r, 300));
  await page.reload();
  await page.locator('#verdict', { hasText: /Fits|Does not fit/ }).waitFor();
  assert.ok(await page.locator('#chart svg rect').count() > 5, 'chart drawn offline');
  // the reference suite is not in the first load: the accuracy panel, never opened while
  // online, fetches it, and the service worker cached it at install
  await page.click('#accuracy summary');
  await page.locator('#accuracy-summary tbody tr').first().waitFor();
  assert.equal(await page.locator('#accuracy-error').count(), 0);
  // the formats worker, never started while online, runs from the cache too
  await page.click('#import summary');
  await page.fill('#import-text', 'vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2');
  await page.click('#import-apply');
  await page.locator('#import-recognised', { hasText: 'vllm serve command line' }).waitFor();
  await context.close();
});

test('offline after a deploy: a deploy whose first load is cut keeps the old copy working offline', async () => {
  // two deploys of the site: v1 is dist/; v2 is the same build with every hashed asset
  // renamed (what a new build does), its references rewritten
  const v2 = mkdtempSync(path.join(tmpdir(), 'deploy2-'));
  const files = readdirSync(DIST);
  const renamed = new Map(files.filter(f => /-[0-9a-f]{8,}(_bg)?\.(js|wasm|css)$/.test(f))
    .map(f => [f, f.replace(/-([0-9a-f]{8,})/, '-$1v2')]));
  for (const f of files) {
    let data = readFileSync(path.join(DIST, f));
    if (/\.(html|js)$/.test(f)) {
      let text = data.toString();
      for (const [a, b] of renamed) text = text.split(a).join(b);
      data = Buffer.from(text);
    }
    writeFileSync(path.join(v2, renamed.get(f) ?? f), data);
  }
  assert.ok(renamed.size >= 3, `hashed assets renamed: ${[...renamed.keys()]}`);
  // a server whose deploy can be switched, whose assets can fail (a connection lost after
  // the page arrived) and which can go away entirely
  const state = { root: DIST, assetsDown: false, down: false };
  const types = { html: 'text/html', js: 'text/javascript', wasm: 'application/wasm', css: 'text/css', json: 'application/json', jsonl: 'text/plain' };
  const srv = http.createServer((req, res) => {
    if (state.down) { req.socket.destroy(); return; }
    const name = decodeURIComponent(new URL(req.url, 'http://x').pathname).replace(/^\/+/, '') || 'index.html';
    const ext = name.split('.').pop();
    if (state.assetsDown && /^(js|wasm|css)$/.test(ext)) { res.writeHead(503); res.end(); return; }
    try {
      const body = readFileSync(path.join(state.root, path.basename(name)));
      res.writeHead(200, { 'content-type': types[ext] ?? 'application/octet-stream', 'cache-control': 'no-cache' });
      res.end(body);
    } catch { res.writeHead(404); res.end(); }
  });
  await new Promise(r => srv.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${srv.address().port}/`;
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  const cachedPage = () => page.evaluate(async () => {
    const r = await caches.match(new URL('./', location.href).href);
    return r ? r.text() : '';
  });
  // 1. a visit to v1: the service worker caches it
  await page.goto(origin);
  await page.locator('#verdict', { hasText: /Fits|Does not fit/ }).waitFor();
  await page.evaluate(async () => { await navigator.serviceWorker.ready; });
  assert.equal(await page.locator('#boot').count(), 0, 'the loading message is gone once the app runs');
  // 2. v2 is deployed; its page arrives but its assets do not: the page says so (never
  // blank), and the cached copy stays v1's
  Object.assign(state, { root: v2, assetsDown: true });
  await page.reload();
  await page.locator('#boot', { hasText: 'could not load' }).waitFor();
  await page.screenshot({ path: path.join(OUT, 'deploy-cut.png') });
  assert.ok(!(await cachedPage()).includes('v2'), 'the cut deploy did not replace the cached page');
  // 3. offline now: v1 from the cache, working
  state.down = true;
  errors.length = 0;
  await page.reload();
  await page.locator('#verdict', { hasText: /Fits|Does not fit/ }).waitFor();
  assert.ok(await page.locator('#chart svg rect').count() > 5, 'v1 works offline');
  // 4. back online: v2 loads whole and becomes the cached copy, v1's assets are dropped
  Object.assign(state, { down: false, assetsDown: false });
  await page.reload();
  await page.locator('#verdict', { hasText: /Fits|Does not fit/ }).waitFor();
  await page.waitForFunction(async () => {
    const r = await caches.match(new URL('./', location.href).href);
    return r && (await r.text()).includes('v2');
  });
  await page.waitForFunction(async (old) => {
    const keys = (await (await caches.open('gpu-mem-calc-v1')).keys()).map(r => r.url);
    return !keys.some(u => old.some(o => u.endsWith(o)));
  }, [...renamed.keys()]);
  // 5. offline again: v2 from the cache, working, the saved configuration kept
  state.down = true;
  await page.reload();
  await page.locator('#verdict', { hasText: /Fits|Does not fit/ }).waitFor();
  assert.ok(await page.locator('#chart svg rect').count() > 5, 'v2 works offline');
  assert.ok((await page.content()).includes('v2'), 'the page is v2');
  assert.deepEqual(errors, []);
  await context.close();
  srv.close();
});

test('hostile browser state: unreadable, oversized and old saved configurations, hostile links, storage full, two tabs', async () => {
  const KEY = 'gpu-mem-calc.config.v1';
  const ASIDE = 'gpu-mem-calc.config.unreadable.v1';
  /** A fresh profile whose localStorage holds `items` before the app's first script runs. */
  async function seeded(items, url = `${ORIGIN}${BASE}`) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    await context.addInitScript(items => {
      if (sessionStorage.getItem('seeded')) return;
      sessionStorage.setItem('seeded', '1');
      for (const [k, v] of Object.entries(items)) localStorage.setItem(k, v);
    }, items);
    const { page, errors } = await openPage(context, url);
    return { context, page, errors };
  }
  const stored = (page, k) => page.evaluate(k => localStorage.getItem(k), k);

  // unreadable saved documents: moved aside with a message, the default shown, never overwritten
  const truncated = '{"schema_version": 2, "model": {"preset": "qwen2.5-7b"}, "training": {"micro_batch_size": 3, "seq';
  for (const [text, why] of [
    ['this is not json', /not JSON/],
    [truncated, /cut off/],
    ['[1, 2, 3]', /not a configuration object/],
  ]) {
    const { context, page, errors } = await seeded({ [KEY]: text });
    await page.locator('#status', { hasText: 'could not be read' }).waitFor();
    assert.match(await page.locator('#status').textContent(), why);
    assert.match(await page.locator('#verdict').textContent(), /Fits|Does not fit/);
    assert.equal(await stored(page, ASIDE), text);
    await page.fill('#training-micro_batch_size', '2');
    await page.waitForFunction(k => JSON.parse(localStorage.getItem(k) ?? '{}').training?.micro_batch_size === 2, KEY);
    assert.equal(await stored(page, ASIDE), text, 'the unreadable document is kept');
    assert.deepEqual(errors, []);
    await context.close();
  }

  // an unreadable 5 MB document: Chromium's localStorage (about 5 MiB per origin) has no
  // room for a copy, so it is left in place and never saved over
  const big = 'x'.repeat(5 * 1000 * 1000);
  {
    const { context, page, errors } = await seeded({ [KEY]: big });
    await page.locator('#status', { hasText: 'could not be read' }).waitFor();
    assert.match(await page.locator('#status').textContent(), /no room for a copy/);
    await page.fill('#training-micro_batch_size', '2');
    await page.waitForTimeout(400);
    assert.equal((await stored(page, KEY)).length, big.length, 'left in place');
    assert.deepEqual(errors, []);
    await context.close();
  }

  // an oversized (5 MB) but readable document: shown with its errors, kept as the saved one
  {
    const doc = JSON.stringify({ schema_version: 2, model: { preset: 'llama-3.1-8b' }, notes: 'z'.repeat(5 * 1000 * 1000) });
    const { context, page, errors } = await seeded({ [KEY]: doc });
    await page.locator('.errors, [aria-invalid=true], #status').first().waitFor();
    assert.match(await page.locator('body').textContent(), /notes/);
    await page.waitForTimeout(400);
    assert.equal(await stored(page, KEY), doc, 'the saved document is not replaced by an invalid edit');
    assert.deepEqual(errors, []);
    await context.close();
  }

  // old formats: a schema 1 document and the seed format are migrated and shown
  for (const doc of [
    { schema_version: 1, model: { preset: 'qwen2.5-7b' }, training: { micro_batch_size: 3, seq_len: 2048 }, engine: { type: 'ddp' } },
    { model: { name: 'llama2-7b', num_layers: 32 }, training: { batch_size: 3, dtype: 'bf16' }, engine: { type: 'deepspeed', zero_stage: 2 } },
  ]) {
    const { context, page, errors } = await seeded({ [KEY]: JSON.stringify(doc) });
    assert.equal(await page.inputValue('#training-micro_batch_size'), '3');
    assert.match(await page.locator('#verdict').textContent(), /Fits|Does not fit/);
    assert.deepEqual(errors, []);
    await context.close();
  }

  // links: cut off, oversized and old-version fragments are rejected; the saved one stays
  {
    const saved = JSON.stringify({ schema_version: 2, model: { preset: 'qwen2.5-7b' }, training: { micro_batch_size: 3 } });
    const enc = s => Buffer.from(s).toString('base64url');
    const good = enc(JSON.stringify({ schema_version: 2, model: { preset: 'llama-3.1-8b' }, training: { micro_batch_size: 5 } }));
    for (const [hash, why] of [
      [`#c=1.${good.slice(0, good.length / 2)}`, /rejected/],
      [`#c=1.${'A'.repeat(400 * 1024)}`, /too large/],
      [`#c=0.${good}`, /version/],
      ['#c=', /cut off/],
    ]) {
      const { context, page, errors } = await seeded({ [KEY]: saved }, `${ORIGIN}${BASE}${hash}`);
      await page.locator('#status', { hasText: 'rejected' }).waitFor();
      assert.match(await page.locator('#status').textContent(), why);
      assert.equal(await page.inputValue('#training-micro_batch_size'), '3');
      const kept = JSON.parse(await stored(page, KEY));  // the same configuration (written back with its task)
      assert.deepEqual([kept.model.preset, kept.training.micro_batch_size], ['qwen2.5-7b', 3]);
      assert.deepEqual(errors, []);
      await context.close();
    }
  }

  // storage full: an edit says it was not saved, and the link still holds it
  {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    await context.addInitScript(() => {
      if (sessionStorage.getItem('seeded')) return;
      sessionStorage.setItem('seeded', '1');
      // fill localStorage to its quota
      let chunk = 'f'.repeat(1024 * 1024), i = 0;
      while (chunk.length > 0) {
        try { localStorage.setItem(`fill${i++}`, chunk); } catch { chunk = chunk.slice(chunk.length / 2 | 0); if (chunk.length < 8) break; }
      }
    });
    const { page, errors } = await openPage(context);
    await page.fill('#training-micro_batch_size', '6');
    await page.locator('#status', { hasText: 'Not saved' }).waitFor();
    // the link holds the edit (not the link written at load, before it)
    await page.waitForFunction(() => {
      const m = location.hash.match(/^#c=1\.([^&]*)/);
      if (!m) return false;
      const doc = JSON.parse(atob(m[1].replace(/-/g, '+').replace(/_/g, '/')));
      return doc.training && doc.training.micro_batch_size === 6;
    });
    const link = await page.evaluate(() => location.href);
    const p2 = await (await browser.newContext()).newPage();
    await p2.goto(link);
    await p2.locator('#status', { hasText: 'Loaded the configuration from the link' }).waitFor();
    assert.equal(await p2.inputValue('#training-micro_batch_size'), '6');
    await p2.context().close();
    assert.deepEqual(errors, []);
    await context.close();
  }

  // two tabs editing at once: each keeps its own configuration in its link; storage holds the last write
  {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const a = await openPage(context);
    const b = await openPage(context);
    await a.page.fill('#training-micro_batch_size', '2');
    await b.page.fill('#training-micro_batch_size', '7');
    for (const [t, v] of [[a, 2], [b, 7]]) {
      await t.page.waitForFunction(v => location.hash.startsWith('#c=1.') &&
        JSON.parse(atob(location.hash.slice(5).split('&')[0].replace(/-/g, '+').replace(/_/g, '/'))).training?.micro_batch_size === v, v);
    }
    // the last write wins (a background tab's timers are throttled, so which one is not fixed)
    await b.page.waitForTimeout(300);
    assert.ok([2, 7].includes(JSON.parse(await stored(b.page, KEY)).training.micro_batch_size));
    await a.page.reload();
    await a.page.locator('#verdict').waitFor();
    assert.equal(await a.page.inputValue('#training-micro_batch_size'), '2');
    await b.page.reload();
    await b.page.locator('#verdict').waitFor();
    assert.equal(await b.page.inputValue('#training-micro_batch_size'), '7');
    assert.deepEqual([...a.errors, ...b.errors], []);
    await context.close();
  }
});
