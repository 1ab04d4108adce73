// The npm package (pkg/, built by scripts/build-pkg.sh) in Node: the API's results against
// the Rust tests' hand-derived bytes and transformers' parameter counts, errors as data,
// and byte-identical estimates to the Rust core (the CLI) for every preset.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const require = createRequire(import.meta.url);
const api = require(path.join(ROOT, 'pkg/node/gpu_mem_calc.js'));
const pkgJson = JSON.parse(readFileSync(path.join(ROOT, 'pkg/package.json'), 'utf8'));

test('estimate: the bytes core/tests/engines.rs derives by hand', () => {
  // Megatron, Llama-2-7B (6 738 415 616 parameters), AMP bf16: bf16 weights 2 + fp32
  // main_grad 4 + fp32 master 4 + Adam moments 8 = 18 B/param (engines.rs megatron_regimes)
  const e = api.estimate({
    model: { preset: 'llama-2-7b' },
    training: { seq_len: 1024, precision: 'amp_bf16', activation_checkpointing: 'full' },
    engine: { type: 'megatron' },
    hardware: { gpu: 'h200-141gb' },
  });
  const step = e.phases.find(p => p.phase === 'optimizer_step').components;
  assert.equal(step.weights + step.gradients + step.master_weights + step.optimizer_states, 18 * 6_738_415_616);
  assert.equal(typeof e.peak_allocated_bytes, 'number');
  assert.ok(!(e.components instanceof Map), 'plain objects, not Maps');
  // JSON text works too
  assert.deepEqual(api.estimate(JSON.stringify({ model: { preset: 'gpt2' } })).params, api.estimate({ model: { preset: 'gpt2' } }).params);
});

test('invalid input throws an Error carrying the field errors', () => {
  assert.throws(() => api.estimate({ model: { preset: 'llama-3.1-8b' }, training: { micro_batch_size: 0 } }), err => {
    assert.ok(err instanceof Error);
    assert.equal(err.fieldErrors[0].field, 'training.micro_batch_size');
    assert.equal(err.fieldErrors[0].value, '0');
    assert.match(err.message, /training\.micro_batch_size/);
    return true;
  });
  assert.throws(() => api.estimate({ model: { preset: 'llama-3.1-8b' }, trainning: {} }), err => err.fieldErrors[0].message.includes('trainning'));
  assert.throws(() => api.estimate('{not json'), err => err.fieldErrors[0].message.startsWith('invalid JSON'));
  assert.deepEqual(api.validate({ model: { preset: 'gpt2' } }), []);
  const errs = api.validate({ model: { preset: 'gpt2' }, hardware: { num_gpus: 8 }, parallelism: { data_parallel_size: 3 } });
  assert.equal(errs[0].field, 'parallelism.data_parallel_size');
  assert.throws(() => api.solve({ model: { preset: 'gpt2' } }, 'max_everything'), err => err.fieldErrors[0].field === 'target');
});

test('parseHfConfig and paramCount: exactly transformers\' counts for every reference config', () => {
  const ref = JSON.parse(readFileSync(path.join(ROOT, 'tests/reference/hf_param_counts.json'), 'utf8'));
  const presets = api.presets();
  let n = 0;
  for (const r of ref.counts) {
    const preset = presets.models.find(p => p.file === r.file);
    const file = preset ? path.join(ROOT, 'presets/models/hf', r.file) : path.join(ROOT, 'tests/reference/hf_configs', r.file);
    const text = readFileSync(file, 'utf8');
    const arch = api.parseHfConfig(text);
    assert.equal(arch.model_type.length > 0, true);
    const counts = api.paramCount({ hf_config: JSON.parse(text) });
    assert.equal(counts.total, r.total, r.file);
    n++;
  }
  assert.ok(n >= 56);
  assert.throws(() => api.parseHfConfig({ model_type: 'bert' }), err => /supported/.test(err.message));
});

test('presets, solvers, versions', () => {
  const p = api.presets();
  assert.ok(p.models.length >= 31 && p.gpus.length >= 8 && p.examples.length >= 3);
  assert.ok(p.gpus.some(g => g.id === 'h100-80gb' && g.memory_bytes > 79e9));
  const cfg = { model: { preset: 'llama-3.1-8b' }, training: { seq_len: 4096, activation_checkpointing: 'full' },
    engine: { type: 'deepspeed', zero_stage: 3 }, hardware: { num_gpus: 8, gpu: 'h100-80gb' } };
  const s = api.maxMicroBatch(cfg);
  assert.equal(s.target, 'max_micro_batch');
  assert.deepEqual(api.solve(cfg, 'max_micro_batch'), s);
  // the answer is searched over layouts and states its own: its document fits, one more
  // micro-batch on that layout does not
  assert.ok(s.value >= s.value_with_config_layout && s.layout.num_gpus === 8, s.message);
  assert.equal(s.config.training.micro_batch_size, s.value);
  assert.ok(api.estimate(s.config).fits);
  assert.ok(!api.estimate({ ...s.config, training: { ...s.config.training, micro_batch_size: s.value + 1 } }).fits);
  // the config's own layout, exact to one step
  const own = s.value_with_config_layout;
  assert.ok(api.estimate({ ...cfg, training: { ...cfg.training, micro_batch_size: own } }).fits);
  assert.ok(!api.estimate({ ...cfg, training: { ...cfg.training, micro_batch_size: own + 1 } }).fits);
  assert.equal(api.gpuFits(cfg).length, p.gpus.length);
  assert.equal(api.schemaVersion(), 2);
  assert.equal(pkgJson.gpuMemCalc.schemaVersion, api.schemaVersion());
  assert.equal(api.version(), pkgJson.version);
});

test('byte-identical to the Rust core for every preset (training and inference)', () => {
  const cli = path.join(ROOT, 'target/debug/gpu-mem-calc');
  assert.ok(existsSync(cli), 'build the CLI first (cargo build -p gpu-mem-calc)');
  const dir = mkdtempSync(path.join(tmpdir(), 'pkg-'));
  let n = 0;
  for (const m of api.presets().models) {
    for (const cfg of [
      { model: { preset: m.id }, training: { seq_len: 2048, activation_checkpointing: 'full' },
        engine: { type: 'deepspeed', zero_stage: 3 }, hardware: { num_gpus: 8 } },
      { mode: 'inference', model: { preset: m.id }, inference: { batch_size: 4, context_len: 4096 } },
    ]) {
      const file = path.join(dir, 'c.json');
      writeFileSync(file, JSON.stringify(cfg));
      let rust;
      try {
        rust = execFileSync(cli, ['calculate', '--config', file, '--json'], { encoding: 'utf8' });
      } catch (e) {
        // the same config must be rejected by both, with the same errors
        assert.throws(() => api.estimate(cfg));
        continue;
      }
      assert.equal(JSON.stringify(api.estimate(cfg)), JSON.stringify(JSON.parse(rust)), `${m.id} ${cfg.mode ?? 'training'}`);
      n++;
    }
  }
  assert.ok(n >= 50, `${n} presets compared`);
});

test('plan: the same ranked plans as the CLI', () => {
  const req = { config: { model: { preset: 'llama-3.2-1b' }, training: { seq_len: 2048 }, hardware: { gpu: 'h100-80gb' } },
    num_gpus: 8, global_batch_sequences: 64, engines: ['fsdp', 'megatron'], top: 5 };
  const r = api.plan(req);
  assert.equal(r.plans.length, 5);
  assert.ok(r.plans.every((p, i) => i === 0 || r.plans[i - 1].step.seconds <= p.step.seconds));
  // "use this plan": each plan's document estimates to the plan's bytes
  for (const p of r.plans) assert.equal(api.estimate(p.config).total_bytes, p.total_bytes);
  const cli = path.join(ROOT, 'target/debug/gpu-mem-calc');
  const rust = JSON.parse(execFileSync(cli, ['plan', '--model', 'llama-3.2-1b', '--gpu', 'h100-80gb', '--seq', '2048',
    '--gpus', '8', '--global-batch', '64', '--engines', 'fsdp,megatron', '--top', '5', '--json'], { encoding: 'utf8' }));
  assert.deepEqual(r.plans.map(p => p.summary), rust.plans.map(p => p.summary));
  assert.throws(() => api.plan({ ...req, engines: ['horovod'] }), err => err.fieldErrors[0].field === 'engines[0]');
});

test('importConfig and exportConfig: framework files as the CLI reads and writes them', () => {
  const fixture = f => path.join(ROOT, 'tests/fixtures/formats', f);
  assert.deepEqual(api.formats().map(f => f.format),
    ['deepspeed', 'hf_trainer', 'accelerate', 'torchtune', 'axolotl', 'torchtitan', 'megatron', 'vllm', 'sglang']);
  assert.deepEqual(api.formats().filter(f => f.serving).map(f => f.file_name), ['vllm_serve.sh', 'sglang_launch.sh']);
  // accelerate's FSDP example over Llama-3.1-8B: the same report as `gpu-mem-calc import --json`
  const text = readFileSync(fixture('accelerate_fsdp.yaml'), 'utf8');
  const base = { model: { preset: 'llama-3.1-8b' } };
  const im = api.importConfig(text, { base });
  assert.equal(im.format, 'accelerate');
  assert.equal(im.config.engine.type, 'fsdp');
  assert.equal(im.config.hardware.num_gpus, 2);
  assert.ok(im.read.some(r => r.from === 'num_processes' && r.to === 'hardware.num_gpus'));
  assert.ok(im.ignored.some(i => i.key === 'fsdp_config.fsdp_backward_prefetch'));
  const dir = mkdtempSync(path.join(tmpdir(), 'pkg-'));
  writeFileSync(path.join(dir, 'base.json'), JSON.stringify(base));
  const cli = path.join(ROOT, 'target/debug/gpu-mem-calc');
  const rust = JSON.parse(execFileSync(cli, ['import', fixture('accelerate_fsdp.yaml'), '--base', path.join(dir, 'base.json'), '--json'], { encoding: 'utf8' }));
  assert.equal(JSON.stringify(im), JSON.stringify(rust));
  // the model option overrides the file's
  assert.equal(api.importConfig('vllm serve meta-llama/Llama-3.1-8B-Instruct', { model: { preset: 'qwen2.5-7b' } }).config.model.preset, 'qwen2.5-7b');
  // export, then import over the format's base: the same estimate to the byte
  const yaml = api.exportConfig(im.config, 'accelerate');
  assert.match(yaml, /distributed_type: FSDP/);
  const back = api.importConfig(yaml, { base: im.config });
  assert.equal(JSON.stringify(api.estimate(back.config)), JSON.stringify(api.estimate(im.config)));
  // errors as data: the file's key, our key, the unknown format
  assert.throws(() => api.importConfig('{"zero_optimization": {"stage": 7}}'), err => err.fieldErrors[0].field === 'zero_optimization.stage');
  assert.throws(() => api.exportConfig(im.config, 'torchtitan'), err => /torchtitan runs FSDP2/.test(err.message));
  assert.throws(() => api.exportConfig(im.config, 'horovod'), err => err.fieldErrors[0].field === 'format');
  assert.throws(() => api.importConfig('x', { bogus: 1 }), err => err.fieldErrors[0].field === 'options');
});
