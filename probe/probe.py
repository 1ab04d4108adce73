#!/usr/bin/env python3
"""Memory probe: run a config in gpu-mem-calc's schema with PyTorch + transformers and record
the memory it really allocates, per phase and per category.

    python3 probe/probe.py CONFIG.json [CONFIG.json ...] --out records.jsonl
    python3 probe/probe.py --grid probe/grid.json --out tests/reference/probe_records.jsonl

Devices:
  --device fake   (default) CPU under FakeTensorMode: no memory is allocated, every tensor's
                  size is tracked by torch.distributed._tools.mem_tracker.MemTracker (a
                  TorchDispatchMode), so 7B-70B models at long sequences run in seconds.
  --device cpu    the same with real CPU tensors (slow; used to validate fake mode).
  --device cuda   a CUDA GPU: torch.cuda.max_memory_allocated / max_memory_reserved per phase,
                  the CUDA context, nvidia-smi's used memory (and MemTracker's categories).

A training run builds the model from its config.json with random weights (never downloading
anything), then runs two steps of forward, backward, optimizer step and zero_grad; the second
step is the steady state. An inference run prefills the prompt and decodes to context_len.
Each record holds the config, the versions, and the measured bytes (see probe/README.md).
"""
import argparse
import contextlib
import json
import os
import platform
import sys
import time

import torch
import transformers
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed._tools.mem_tracker import MemTracker
from transformers import AutoConfig, AutoModelForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuda_semantics  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATEGORIES = {"PARAM": "parameters", "BUFFER": "buffers", "GRAD": "gradients", "ACT": "activations",
              "TEMP": "temporaries", "OPT": "optimizer_states", "OTH": "other"}


def hf_config(model: dict) -> dict:
    """The config.json of the model section: a preset file, an hf_config, or HF keys."""
    if "preset" in model:
        index = json.load(open(os.path.join(ROOT, "presets", "models", "index.json")))
        entry = next(m for m in index["models"] if m["id"] == model["preset"])
        cfg = json.load(open(os.path.join(ROOT, "presets", "models", "hf", entry["file"])))
    elif "hf_config" in model:
        cfg = dict(model["hf_config"])
    else:
        cfg = {"model_type": "llama"}
    for k, v in model.items():
        if k not in ("preset", "hf_config", "name", "num_parameters"):
            (cfg["text_config"] if "text_config" in cfg else cfg)[k] = v
    return cfg


def build_model(cfg: dict, dtype, attention: str, device: str = "cuda"):
    cfg = {k: v for k, v in cfg.items() if k not in ("auto_map", "quantization_config", "_source")}
    config = AutoConfig.for_model(**cfg)
    config._attn_implementation = {"flash": "sdpa"}.get(attention, attention)
    if device != "cuda" and attention in ("sdpa", "flash"):
        cuda_semantics.zero_attention_dropout(config)
    return AutoModelForCausalLM.from_config(config, dtype=dtype)


def make_optimizer(params, name: str, impl: str):
    kw = {"foreach": True} if impl == "foreach" else {"fused": True} if impl == "fused" else {"foreach": False}
    if name in ("adamw", "adam"):
        cls = torch.optim.AdamW if name == "adamw" else torch.optim.Adam
        return cls(params, lr=1e-5, **kw)
    if name == "sgd_momentum":
        kw.pop("fused", None)
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, **kw)
    if name == "sgd":
        kw.pop("fused", None)
        return torch.optim.SGD(params, lr=1e-3, **kw)
    if name == "adafactor":
        from transformers.optimization import Adafactor
        return Adafactor(params, lr=1e-3, relative_step=False, scale_parameter=False, warmup_init=False)
    if name == "torch_adafactor":
        kw.pop("fused", None)
        return torch.optim.Adafactor(params, lr=1e-3, **kw)
    if name in ("adamw_8bit", "lion_8bit"):
        # bitsandbytes: under fake tensors its ops run their registered fake kernels, which
        # allocate what the fused CUDA kernel does (the states; no temporaries)
        import bitsandbytes as bnb
        cls = bnb.optim.AdamW8bit if name == "adamw_8bit" else bnb.optim.Lion8bit
        return cls(params, lr=1e-5)
    raise ValueError(f"optimizer {name} is not probed")


class ScalarFakeMode(FakeTensorMode):
    """FakeTensorMode that answers a read of a tensor's value (`.item()`) with 1 (False for
    booleans): torch.optim.Adafactor reads each update's norm to scale its step size, a value
    that does not change what is allocated; a fake tensor has no value to read."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            t = args[0]
            return False if t.dtype == torch.bool else (1.0 if t.is_floating_point() else 1)
        return super().__torch_dispatch__(func, types, args, kwargs)

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        """Lets `torch.compile` trace under this mode (`compile: true`); the compiled graphs
        run under it."""
        return True


class GlobalMemTracker(MemTracker):
    """MemTracker keeping only the global peak. Upstream updates every tracked module's
    peak after every op, a loop over all modules (48 layers x 128 experts = 25k modules for
    Qwen3-30B-A3B) that makes large models take minutes; the probe reads only the global
    peak by category, which this computes exactly as upstream does."""

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        """`torch.compile` compiles with the tracker off and runs the compiled graphs under
        it: the allocations of a compiled layer are counted, those of tracing are not."""
        return True

    def _update_peak_stats(self, peak_state) -> None:
        for dev, dev_snap in self._curr_mem_snap.items():
            if self._peak_mem.get(dev, 0) < dev_snap["Total"]:
                self._peak_mem[dev] = dev_snap["Total"]
                self._peak_mem_snap[dev] = dict(dev_snap)


    def _pre_fw_hook(self, module, inputs) -> None:
        """A root module called again within a step (gradient accumulation, pipeline
        micro-batches): upstream refuses it before changing any state; per-module stats are
        not used here, so the call goes on untracked per module (the global counts are)."""
        try:
            super()._pre_fw_hook(module, inputs)
        except NotImplementedError:
            pass

    def skip_frozen(self, model) -> None:
        """MemTracker hooks every parameter's gradient and fails on frozen ones (LoRA base
        weights): mark those as hooked already, with handles that remove nothing."""

        class _NoHandle:
            def remove(self):
                pass

        for p in model.parameters():
            if not p.requires_grad:
                self._param_to_grad_hook_handles[p] = (_NoHandle(), _NoHandle())


class PhaseTracker:
    """Per-phase peaks from a MemTracker: the peak since the last mark, by category."""

    def __init__(self, mt: MemTracker):
        self.mt = mt
        self.phases = {}

    def peak_total(self) -> int:
        """The peak (total bytes) since the last mark."""
        peak = list(self.mt.get_tracker_snapshot("peak").values())
        return int(peak[0]["Total"]) if peak else 0

    def mark(self, name: str, corrected_total: int | None = None):
        """Closes a phase; a phase marked again (the micro-batches of gradient accumulation)
        keeps its larger peak. `corrected_total` replaces the tracker's total (kept as
        `tracker_total`)."""
        peak = list(self.mt.get_tracker_snapshot("peak").values())
        snap = {CATEGORIES.get(str(k).split(".")[-1], str(k)): int(v) for k, v in peak[0].items()} if peak else {}
        snap["total"] = snap.pop("Total", 0)
        if corrected_total is not None:
            snap["tracker_total"], snap["total"] = snap["total"], corrected_total
        if name not in self.phases or snap["total"] >= self.phases[name]["total"]:
            self.phases[name] = snap
        cur = self.mt.get_tracker_snapshot("current")
        self.mt._peak_mem_snap = cur
        self.mt._peak_mem = {d: s["Total"] for d, s in cur.items()}


class HostSavedTensors(torch.autograd.graph.saved_tensors_hooks):
    """`torch.autograd.graph.save_on_cpu(pin_memory=True)` as it behaves on a GPU, for the
    probe whose "GPU" is the CPU: a saved tensor leaves device memory when it is packed (its
    pinned host copy is not device memory, so only its shape is kept here) and comes back as
    a new device tensor when backward unpacks it (transformers
    `activation_checkpointing_enable(offload=True)` wraps each layer's checkpoint in it)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack(tensor):
            return (tensor.size(), tensor.dtype, tensor.device)

        def unpack(packed):
            size, dtype, device = packed
            return torch.empty(size, dtype=dtype, device=device)

        super().__init__(pack, unpack)


def torchtitan_op_sac_context():
    """torchtitan's per-op selective activation checkpointing on one decoder layer
    (torchtitan/models/llama/parallelize_llama.py `_apply_ac_to_transformer_block`, option
    "op"; benchmarks/llama3_h100_202412_torchtitan.md): the outputs of the ops in `_save_list`
    are saved, except every second `mm` of the layer; everything else is recomputed in
    backward. The CPU flash kernel stands in for CUDA's (`_scaled_dot_product_flash_attention`
    is on the list; the probe runs the CPU one)."""
    from collections import defaultdict
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
    aten = torch.ops.aten
    save = {aten.mm.default, aten._scaled_dot_product_efficient_attention.default,
            aten._scaled_dot_product_flash_attention.default,
            aten._scaled_dot_product_flash_attention_for_cpu.default,
            torch.ops._c10d_functional.reduce_scatter_tensor.default, aten.max.default}
    meta = defaultdict(int)

    def policy(ctx, func, *args, **kwargs):
        key = ("recompute" if ctx.is_recompute else "forward") + "_mm_count"
        if func == aten.mm.default:
            meta[key] += 1
        to_save = func in save and not (func == aten.mm.default and meta[key] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if to_save else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


COMPILED_GRAPHS = []  # the forward graphs compiled since `compile_layers`


def compile_backend():
    """`aot_eager_decomp_partition` (torch/_dynamo/backends/debugging.py): AOTAutograd with
    inductor's decompositions (`select_decomp_table`) and inductor's partitioner
    (`min_cut_rematerialization_partition`, compiler="inductor"), so the forward graph saves
    for backward exactly what inductor's does; the graphs then run op by op (inductor's
    generated kernels cannot run on fake tensors). With PROBE_COMPILE_SAVED set, each forward
    graph's saved tensors are printed to stderr (name, shape, dtype, bytes)."""
    import functools
    from importlib import import_module
    from functorch.compile import make_boxed_func, min_cut_rematerialization_partition
    from torch._dynamo.backends.common import aot_autograd

    def fw_compiler(gm, example_inputs):
        COMPILED_GRAPHS.append(gm)
        if os.environ.get("PROBE_COMPILE_SAVED") == "graph":
            print(gm.graph, file=sys.stderr)
        if os.environ.get("PROBE_COMPILE_SAVED"):
            out = next(n for n in gm.graph.nodes if n.op == "output")
            for v in out.args[0]:
                t = getattr(v, "meta", {}).get("val")
                if isinstance(t, torch.Tensor):
                    print("saved", v.name, tuple(t.shape), t.dtype, t.numel() * t.element_size(),
                          [u.name for u in v.all_input_nodes], file=sys.stderr)
        return make_boxed_func(gm.forward)

    return aot_autograd(
        fw_compiler=fw_compiler,
        bw_compiler=lambda gm, _: make_boxed_func(gm.forward),
        decompositions=lambda: import_module("torch._inductor.compile_fx").select_decomp_table(),
        partition_fn=functools.partial(min_cut_rematerialization_partition, compiler="inductor"),
    )


def compile_layers(model):
    """`training.compile`: `torch.compile` of each decoder layer's forward, as torchtitan
    (`apply_compile`: per TransformerBlock, fullgraph) and torchtune (`compile_model`: per
    layer) do, with `compile_backend()`. The module hooks (MemTracker's) stay outside the
    compiled graph."""
    backend = compile_backend()
    torch._dynamo.reset()
    COMPILED_GRAPHS.clear()
    # a graph per distinct layer signature (sliding / full attention layers), never a
    # fall-back to eager at the recompile limit
    torch._dynamo.config.recompile_limit = 1024
    n = model.config.get_text_config().num_hidden_layers
    layers = next(m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) == n)
    for layer in layers:
        layer.forward = torch.compile(layer.forward, backend=backend, fullgraph=True, dynamic=False)


def run_training(cfg: dict, model_cfg: dict, device: str) -> dict:
    t = cfg.get("training", {})
    precision = t.get("precision", "amp_bf16")
    half = torch.float16 if "fp16" in precision else torch.bfloat16
    weight_dtype = {"fp32": torch.float32, "amp_bf16": torch.float32, "amp_fp16": torch.float32}.get(precision, half)
    if t.get("lora") and precision.startswith("amp_"):
        # the frozen base as the schema defines it (training.lora.base_weight_format: bf16
        # unless precision is fp32), as transformers 5 loads a checkpoint (dtype="auto")
        weight_dtype = {"fp32": torch.float32, "fp16": torch.float16}.get(
            t["lora"].get("base_weight_format", "bf16"), torch.bfloat16)
    attention = t.get("attention", "sdpa")
    b, s = int(t.get("micro_batch_size", 1)), int(t.get("seq_len", 2048))
    dev = "cuda" if device == "cuda" else "cpu"
    with torch.device(dev):
                model = build_model(model_cfg, weight_dtype, attention, device)
    recompute = t.get("activation_checkpointing", "none")
    offload = bool(t.get("activation_offloading", False))
    if offload:
        import transformers.modeling_utils as mu
        mu.save_on_cpu = HostSavedTensors
    if recompute == "full":
        model.activation_checkpointing_enable({"use_reentrant": False}, offload=offload)
    elif recompute == "selective_op":
        model.activation_checkpointing_enable(
            {"use_reentrant": False, "context_fn": torchtitan_op_sac_context}, offload=offload)
    model.train()
    if t.get("compile"):
        compile_layers(model)
    lora = t.get("lora")
    if lora:
        from peft import LoraConfig, get_peft_model
        if device != "cuda":
            # PEFT moves each new adapter to the base layer's device and dtype with
            # Module.to, which swaps FakeTensor parameters and fails on the weak references
            # FakeTensorMode keeps. Skipped: the adapters are created fp32 on the same device,
            # which is where PEFT's default autocast_adapter_dtype=True leaves them anyway.
            from peft.tuners.tuners_utils import BaseTunerLayer
            BaseTunerLayer._move_adapter_to_device_of_base_layer = lambda self, *a, **k: None
            # and `module.to(weight.device)` of each replaced module: a no-op on one CPU
            orig_to = torch.nn.Module.to

            def same_device_to(self, *args, **kwargs):
                dev, dtype, *_ = torch._C._nn._parse_to(*args, **kwargs)
                if dev is None or dev.type == "cpu":
                    if dtype is not None:
                        # PEFT's ParamWrapper (LoRA on fused MoE expert parameters) casts
                        # the adapters to the base parameter's dtype; FakeTensor parameters
                        # cannot be swapped by Module.to, so their data is replaced
                        for p in self.parameters():
                            if p.dtype.is_floating_point and p.dtype != dtype:
                                p.data = p.data.to(dtype)
                    return self
                return orig_to(self, *args, **kwargs)

            torch.nn.Module.to = same_device_to
        targets = lora.get("target_modules", ["q_proj", "v_proj"])
        model = get_peft_model(model, LoraConfig(r=lora.get("rank", 8), lora_alpha=lora.get("alpha", 16),
                                                 target_modules=targets, lora_dropout=lora.get("dropout", 0.0)))
    params = [p for p in model.parameters() if p.requires_grad]
    # autograd adds a tied embedding's two gradients out of place under a TorchDispatchMode
    # (MemTracker, FakeTensorMode): one vocab x hidden gradient more than CUDA at that moment
    emb, head = model.get_input_embeddings(), model.get_output_embeddings()
    tied = head is not None and emb.weight is head.weight and emb.weight.requires_grad
    artifacts = {"tied_embedding_out_of_place_add_bytes": emb.weight.numel() * emb.weight.element_size()} if tied and device != "cuda" else {}
    opt = make_optimizer(params, t.get("optimizer", "adamw"), t.get("optimizer_impl", "foreach"))
    ids = torch.randint(0, model_cfg.get("vocab_size", 1000) if "vocab_size" in model_cfg else 1000, (b, s), device=dev)
    amp = contextlib.nullcontext()
    if precision.startswith("amp_"):
        amp = torch.autocast(dev, dtype=half)
    mt = GlobalMemTracker()
    mt.skip_frozen(model)
    mt.track_external(model, opt, ids)
    pt = PhaseTracker(mt)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    cuda = {}
    # The tied-embedding artifact happens after the gradient w.r.t. the embedding output is
    # computed (the embedding's backward, then the add). Record the backward's peak up to
    # that moment; the tail's peak is the add itself, where CUDA holds one vocab x hidden
    # gradient less. Corrected backward = max(peak before, tail peak - artifact).
    before_embedding = {}
    if artifacts:
        def on_embedding_output(module, args, output):
            if output.requires_grad:
                output.register_hook(lambda g: before_embedding.update(peak=pt.peak_total()))
        emb.register_forward_hook(on_embedding_output)
    accumulation = int(t.get("gradient_accumulation_steps", 1))
    with mt:
        for step in range(2):
            for _micro in range(accumulation):
                mt.reset_mod_stats()
                before_embedding.clear()
                with amp:
                    out = model(input_ids=ids, labels=ids, use_cache=False)
                loss = out.loss
                if t.get("compile") and not COMPILED_GRAPHS:
                    raise RuntimeError("compile: no decoder layer was compiled")
                pt.mark(f"forward{step}")
                cuda_mark(cuda, f"forward{step}", device)
                loss.backward()
                del out, loss
                corrected = None
                if "peak" in before_embedding:
                    extra = artifacts["tied_embedding_out_of_place_add_bytes"]
                    corrected = max(before_embedding["peak"], pt.peak_total() - extra)
                pt.mark(f"backward{step}", corrected)
                cuda_mark(cuda, f"backward{step}", device)
            opt.step()
            opt.zero_grad(set_to_none=True)
            pt.mark(f"optimizer_step{step}")
            cuda_mark(cuda, f"optimizer_step{step}", device)
    return {"phases": pt.phases, "cuda": cuda, "artifacts": artifacts}


def greedy_next(logits):
    """The next token as transformers `generate` picks it in greedy search
    (generation/utils.py `_sample`): an fp32 copy of the last position's logits
    (`.to(copy=True, dtype=torch.float32)`, a copy even when the logits are fp32), then argmax."""
    return logits[:, -1].to(copy=True, dtype=torch.float32).argmax(-1, keepdim=True)


def run_inference(cfg: dict, model_cfg: dict, device: str) -> dict:
    inf = cfg.get("inference", {})
    fmt = inf.get("weight_format", "bf16")
    dtype = {"fp32": torch.float32, "fp16": torch.float16}.get(fmt, torch.bfloat16)
    b, ctx = int(inf.get("batch_size", 1)), int(inf.get("context_len", 4096))
    decode = 4
    prompt = int(inf.get("prompt_len", ctx - decode))
    dev = "cuda" if device == "cuda" else "cpu"
    with torch.device(dev):
        model = build_model(model_cfg, dtype, inf.get("attention", "sdpa"), device).eval()
    keep = int(inf.get("logits_to_keep", 1))  # transformers: 0 keeps every position's logits
    ids = torch.randint(0, 1000, (b, prompt), device=dev)
    mt = GlobalMemTracker()
    mt.track_external(model, ids)
    pt = PhaseTracker(mt)
    cuda = {}
    with mt, torch.no_grad():
        out = model(input_ids=ids, use_cache=True, logits_to_keep=keep)
        cache = out.past_key_values
        nxt = greedy_next(out.logits)
        del out
        pt.mark("prefill")
        cuda_mark(cuda, "prefill", device)
        for _ in range(ctx - prompt):
            mt.reset_mod_stats()  # per-module stats allow one root call per iteration
            out = model(input_ids=nxt, past_key_values=cache, use_cache=True, logits_to_keep=1)
            cache = out.past_key_values
            nxt = greedy_next(out.logits)
            del out
        pt.mark("decode")
        cuda_mark(cuda, "decode", device)
    return {"phases": pt.phases, "cuda": cuda}


def cuda_mark(cuda: dict, name: str, device: str):
    if device != "cuda":
        return
    torch.cuda.synchronize()
    cuda[name] = {"max_memory_allocated": torch.cuda.max_memory_allocated(),
                  "max_memory_reserved": torch.cuda.max_memory_reserved()}
    torch.cuda.reset_peak_memory_stats()


def nvidia_smi_used() -> int | None:
    try:
        import subprocess
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=20).stdout.strip().splitlines()
        return int(out[0]) * 2**20 if out else None
    except Exception:
        return None


def probe(cfg: dict, device: str) -> dict:
    model_cfg = hf_config(cfg.get("model", {}))
    mode = cfg.get("mode", "inference" if "inference" in cfg and "training" not in cfg else "training")
    context = {}
    if device == "cuda":
        torch.cuda.init()
        torch.ones(1, device="cuda")
        free, total = torch.cuda.mem_get_info()
        context = {"cuda_context_bytes": total - free, "cuda_total_bytes": total, "device_name": torch.cuda.get_device_name()}
    start = time.time()
    if device != "cuda":
        cuda_semantics.install()
    if device == "fake":
        cuda_semantics.answer_data_checks_as_real()
        cuda_semantics.efficient_sdpa_for_unequal_head_dims()
    fake = ScalarFakeMode() if device == "fake" else contextlib.nullcontext()
    with fake:
        torch.manual_seed(0)
        result = run_inference(cfg, model_cfg, device) if mode == "inference" else run_training(cfg, model_cfg, device)
    phases = result["phases"]
    # the steady state: the second step's phases (inference has one of each)
    steady = {k.rstrip("1"): v for k, v in phases.items() if not k.endswith("0")}
    peak_phase = max(steady, key=lambda k: steady[k]["total"])
    measured = {
        "metric": "allocated" if device == "cuda" else "tensor_bytes",
        "peak_allocated_bytes": max(v["total"] for v in phases.values()),
        "peak_phase": peak_phase,
        "phases": steady,
        "first_step": {k[:-1]: v for k, v in phases.items() if k.endswith("0")},
    }
    if result.get("artifacts"):
        measured["tracker_artifacts"] = result["artifacts"]
    if device == "cuda":
        measured.update(context)
        measured["cuda"] = result["cuda"]
        measured["peak_allocated_bytes"] = max(v["max_memory_allocated"] for v in result["cuda"].values())
        measured["peak_reserved_bytes"] = max(v["max_memory_reserved"] for v in result["cuda"].values())
        measured["nvidia_smi_used_bytes"] = nvidia_smi_used()
    return {
        "id": cfg.get("id") or cfg.get("name", ""),
        "source": f"probe/probe.py --device {device}",
        "config": {k: v for k, v in cfg.items() if k not in ("id", "split")},
        **({"split": cfg["split"]} if "split" in cfg else {}),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "python": platform.python_version()},
        "seconds": round(time.time() - start, 1),
        "measured": measured,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("configs", nargs="*")
    ap.add_argument("--grid", help="a JSON list of configs (each with an id)")
    ap.add_argument("--device", choices=["fake", "cpu", "cuda"], default="fake")
    ap.add_argument("--out", help="append records here (JSON lines); default stdout")
    ap.add_argument("--only", help="run only grid ids containing this text")
    a = ap.parse_args()
    configs = [json.load(open(p)) for p in a.configs]
    if a.grid:
        configs += json.load(open(a.grid))
    if a.only:
        configs = [c for c in configs if a.only in c.get("id", "")]
    out = open(a.out, "a") if a.out else sys.stdout
    for cfg in configs:
        try:
            rec = probe(cfg, a.device)
        except Exception as e:  # keep going; report the failure
            if os.environ.get("PROBE_TRACEBACK"):
                import traceback; traceback.print_exc()
            print(f"{cfg.get('id')}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        print(json.dumps(rec), file=out, flush=True)
        print(f"{rec['id']}: {rec['measured']['peak_allocated_bytes'] / 2**30:.3f} GiB ({rec['seconds']} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
