#!/usr/bin/env python3
"""Distributed memory probe: one rank of a multi-GPU training run, measured.

    python3 probe/dist_probe.py CONFIG.json [--rank R] [--out records.jsonl]
    python3 probe/dist_probe.py --grid probe/dist_grid.json --out tests/reference/dist_records.jsonl

The run is a gpu-mem-calc config (schema 2) with `hardware.num_gpus` > 1. The process plays
one rank of a `torch.distributed` job on PyTorch's fake process group (backend `fake`,
`torch.testing._internal.distributed.fake_pg.FakeStore`): collectives return at once and
move no data, while every tensor a rank allocates is allocated as it would be. With
`--device fake` (default) the model and everything else are FakeTensors, so 70B models on 64
"ranks" run in a CPU process; with `--device cpu` real tensors (validation). Two training
steps run (forward, backward, optimizer step, zero_grad); the second is the steady state.
Memory is tracked per phase by PyTorch's own `MemTracker` (`FSDPMemTracker` under FSDP2)
with the single-GPU probe's CUDA-semantics emulation (`probe/cuda_semantics.py`).

Engines and layouts (the config's `engine` and `parallelism`):
  fsdp, fsdp_version 2   `fully_shard` on every decoder layer, then on the root; the mesh is
                         (data_parallel_replicate_size, data parallel / replicate) for HSDP;
                         `reshard_after_forward` true / false / int; MixedPrecisionPolicy from
                         `param_dtype` / `reduce_dtype` (default: precision amp_bf16 -> bf16 /
                         fp32); `cpu_offload` -> CPUOffloadPolicy
  ddp                    DistributedDataParallel (`bucket_cap_mb`, `gradient_as_bucket_view`),
                         torch.autocast for AMP
  tensor_parallel_size   DTensor TP with torchtitan's Llama plan (q/k/v/gate/up colwise, o/down
                         rowwise, the embedding rowwise, the LM head colwise); with
                         `sequence_parallel` the norms are SequenceParallel and activations
                         between blocks are sharded on the sequence; `loss_parallel` keeps the
                         logits sharded on the vocabulary (else gathered)
  FSDP2 x TP             2-D mesh (data, tensor): TP first, then fully_shard on the data mesh
  pipeline_parallel_size torch.distributed.pipelining (GPipe, 1F1B, interleaved 1F1B) on the
                         stage's layers; with FSDP2, each stage is fully_shard-ed as torchtitan
                         does (reshard_after_forward false)

See probe/README.md for what cannot run under a fake group and why.
"""
import argparse
import contextlib
import copy
import json
import os
import platform
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import transformers
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.testing._internal.distributed.fake_pg import FakeStore

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuda_semantics  # noqa: E402
from probe import CATEGORIES, GlobalMemTracker, build_model, hf_config, make_optimizer  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


# ------------------------------------------------------------------------------ layout

class Layout:
    """The parallel sizes of a config and this rank's coordinates in the mesh."""

    def __init__(self, cfg: dict, rank: int):
        p = cfg.get("parallelism", {})
        self.tp = int(p.get("tensor_parallel_size", 1))
        self.pp = int(p.get("pipeline_parallel_size", 1))
        self.cp = int(p.get("context_parallel_size", 1))
        self.num_gpus = int(cfg.get("hardware", {}).get("num_gpus", 1))
        self.dp = int(p.get("data_parallel_size") or self.num_gpus // (self.tp * self.pp * self.cp))
        self.replicate = int(p.get("data_parallel_replicate_size", 1))
        self.shard = self.dp // self.replicate
        self.ep = int(p.get("expert_parallel_size", 1))
        assert self.ep == 1 or (self.shard % self.ep == 0 and self.tp == 1 and self.cp == 1), \
            "expert parallel borrows data-parallel shard ranks (tp = cp = 1)"
        self.sp = bool(p.get("sequence_parallel", False)) and self.tp > 1
        self.loss_parallel = bool(p.get("loss_parallel", True)) and self.tp > 1
        self.vpp = int(p.get("virtual_pipeline_parallel_size") or 1)
        self.schedule = p.get("pipeline_schedule") or ("interleaved_1f1b" if self.vpp > 1 else "1f1b")
        assert self.dp * self.tp * self.pp * self.cp == self.num_gpus, "layout does not multiply to num_gpus"
        self.rank = rank
        # torchtitan's mesh order: pp, dp_replicate, dp_shard, cp, tp (tp innermost)
        # with expert parallelism the shard dimension is (efsdp, ep), ep innermost
        # (transformers distributed/expert_parallel.py: efsdp = fsdp x tp / ep)
        self.dims = [("pp", self.pp), ("dp_replicate", self.replicate), ("efsdp", self.shard // self.ep),
                     ("ep", self.ep), ("cp", self.cp), ("tp", self.tp)]
        coords, r = {}, rank
        for name, size in reversed(self.dims):
            coords[name] = r % size
            r //= size
        coords["dp_shard"] = coords["efsdp"] * self.ep + coords["ep"]
        self.coords = coords
        self.stage = coords["pp"]

    def mesh(self):
        """The device mesh (created outside FakeTensorMode: it reads tensor values)."""
        from torch.distributed.device_mesh import init_device_mesh
        names = [n for n, _ in self.dims]
        return init_device_mesh("cpu", tuple(s for _, s in self.dims), mesh_dim_names=tuple(names))


# ------------------------------------------------------------------------------ TP plan

def apply_tp(model: nn.Module, layers, tp_mesh, lay: Layout, first: bool, last: bool):
    """torchtitan's Llama TP plan on transformers modules (torchtitan/models/llama3/infra/
    parallelize.py `apply_tp`), with and without sequence parallelism."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                   SequenceParallel, parallelize_module)
    sp = lay.sp
    seq = Shard(1) if sp else Replicate()
    root_plan = {}
    if first:
        root_plan["model.embed_tokens"] = RowwiseParallel(input_layouts=Replicate(), output_layouts=seq)
    if last:
        if sp:
            root_plan["model.norm"] = SequenceParallel()
        root_plan["lm_head"] = ColwiseParallel(
            input_layouts=seq, output_layouts=Shard(-1) if lay.loss_parallel else Replicate(),
            use_local_output=not lay.loss_parallel)
    if root_plan:
        parallelize_module(model, tp_mesh, root_plan)
    for layer in layers:
        plan = {
            "self_attn": PrepareModuleInput(input_kwarg_layouts={"hidden_states": seq},
                                            desired_input_kwarg_layouts={"hidden_states": Replicate()}),
            "self_attn.q_proj": ColwiseParallel(),
            "self_attn.k_proj": ColwiseParallel(),
            "self_attn.v_proj": ColwiseParallel(),
            "self_attn.o_proj": RowwiseParallel(output_layouts=seq),
            "mlp": PrepareModuleInput(input_layouts=(seq,), desired_input_layouts=(Replicate(),)),
            "mlp.gate_proj": ColwiseParallel(),
            "mlp.up_proj": ColwiseParallel(),
            "mlp.down_proj": RowwiseParallel(output_layouts=seq),
        }
        if sp:
            plan["input_layernorm"] = SequenceParallel()
            plan["post_attention_layernorm"] = SequenceParallel()
        parallelize_module(layer, tp_mesh, plan)
    # every other parameter replicated as a DTensor, so that the optimizer's foreach groups
    # hold one tensor type (torchtitan's norms are DTensors too)
    from torch.distributed.tensor import distribute_tensor
    from torch.distributed.tensor import DTensor
    for mod in model.modules():
        for name, param in list(mod.named_parameters(recurse=False)):
            if not isinstance(param, DTensor):
                mod.register_parameter(name, nn.Parameter(distribute_tensor(param.data, tp_mesh, [Replicate()]),
                                                          requires_grad=param.requires_grad))


def replicated_norms_forward(model: nn.Module):
    """Without sequence parallelism a norm's DTensor weight meets a plain activation: run the
    norm on the weight's local (replicated) tensor, as a replicated parameter does on one GPU."""
    from torch.distributed.tensor import DTensor
    for mod in model.modules():
        w = getattr(mod, "weight", None)
        if type(mod).__name__.endswith("RMSNorm") and isinstance(w, DTensor):
            orig = type(mod).forward

            def fwd(self, hidden_states, _orig=orig):
                w = self.weight
                self._parameters["weight"] = w.to_local()
                try:
                    return _orig(self, hidden_states)
                finally:
                    self._parameters["weight"] = w
            mod.forward = fwd.__get__(mod)


# ------------------------------------------------------------------------------ EP

def apply_ep(model: nn.Module, ep_mesh, tp_mesh):
    """transformers' expert parallelism (distributed/expert_parallel.py): the model's
    `base_model_ep_plan` (fused expert tensors `Shard(0)` on the EP mesh, tokens dispatched to
    the experts' ranks by all-to-all), with the plan's `layers.*` patterns expanded."""
    import re
    from transformers.distributed.expert_parallel import AllToAllEP, apply_expert_parallelism
    AllToAllEP._dispatch_tokens = balanced_dispatch
    plan = {}
    names = [n for n, _ in model.named_modules()] + [n for n, _ in model.named_parameters()]
    for key, style in (model.config.base_model_ep_plan or {}).items():
        rx = re.compile("^model\\." + re.escape(key).replace("\\*", "[0-9]+") + "$")
        plan.update({n: style for n in names if rx.match(n)})
    assert plan, f"{model.config.model_type}: no expert-parallel plan"
    apply_expert_parallelism(model, ep_mesh, tp_mesh, plan)
    return plan


def balanced_dispatch(self, hidden_states, top_k_index, top_k_weights):
    """AllToAllEP._dispatch_tokens with the split sizes of a balanced router: every rank
    sends and receives tokens x top-k / ep rows (a real all-to-all's sizes come from the
    router's choices, read back with `.tolist()`, which fake tensors cannot answer; the
    estimate assumes balanced routing too)."""
    from transformers.distributed.expert_parallel import _AllToAllState, _WaitTensor
    from torch.distributed._functional_collectives import all_to_all_single_autograd
    num_tokens = hidden_states.size(0)
    ep_group, ep_size = self.ep_mesh.get_group(), self.ep_mesh.size()
    num_top_k = top_k_index.size(-1)
    expert_ids = top_k_index.reshape(-1)
    order = torch.argsort(expert_ids)
    send_tokens = hidden_states[order // num_top_k]
    rows = num_tokens * num_top_k
    sizes = [rows // ep_size + (1 if i < rows % ep_size else 0) for i in range(ep_size)]
    send_counts = torch.zeros(self.num_local_experts * ep_size, dtype=torch.long, device=hidden_states.device)
    send_counts = send_counts.scatter_add_(0, expert_ids, torch.ones_like(expert_ids)).view(ep_size, self.num_local_experts)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts, group=ep_group)
    recv_tokens = _WaitTensor.apply(all_to_all_single_autograd(send_tokens, sizes, sizes, ep_group))
    recv_expert_ids = torch.arange(self.num_local_experts, device=hidden_states.device).repeat(ep_size)
    recv_expert_ids = recv_expert_ids.repeat_interleave(recv_counts.reshape(-1), output_size=sum(sizes)).unsqueeze(-1)
    recv_weights = torch.ones_like(recv_expert_ids, dtype=recv_tokens.dtype)
    return recv_tokens, recv_expert_ids, recv_weights, _AllToAllState(top_k_weights, order, sizes, sizes, num_tokens)


# ------------------------------------------------------------------------------ stages

class Stage(nn.Module):
    """The layers of one pipeline stage of a transformers decoder (torchtitan splits its own
    model the same way: the first stage keeps the embedding, the last the norm and head)."""

    def __init__(self, model, layer_ids, first, last):
        super().__init__()
        inner = model.model
        self.embed = inner.embed_tokens if first else None
        self.layers = nn.ModuleList([inner.layers[i] for i in layer_ids])
        self.rotary = inner.rotary_emb
        self.norm = inner.norm if last else None
        self.head = model.lm_head if last else None
        self.first, self.last = first, last

    def forward(self, x):
        h = self.embed(x) if self.first else x
        b, s = h.shape[0], h.shape[1]
        pos = torch.arange(s, device=h.device).unsqueeze(0).expand(b, s)
        pe = self.rotary(h, pos)
        for layer in self.layers:
            h = layer(h, attention_mask=None, position_ids=pos, position_embeddings=pe)
            h = h[0] if isinstance(h, tuple) else h
        if self.last:
            return self.head(self.norm(h))
        return h


def stage_layers(n_layers: int, pp: int, vpp: int, stage: int):
    """The layer ids of each model chunk of pipeline rank `stage` (even split; with virtual
    stages, chunk v of rank s holds the layers of virtual stage v * pp + s)."""
    chunks = pp * vpp
    per = n_layers // chunks
    return [list(range((v * pp + stage) * per, (v * pp + stage + 1) * per)) for v in range(vpp)]


# ------------------------------------------------------------------------------ run

BACKEND = "fake"


def init_group(rank: int, world_size: int):
    """The fake process group, or (validation) a real gloo group of `world_size` processes."""
    if BACKEND == "fake":
        dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=world_size)
    else:
        dist.init_process_group("gloo", rank=rank, world_size=world_size)

def real_device_meshes():
    """A DeviceMesh computes its coordinates from a small index tensor (nonzero on it); FSDP2
    builds the (data, tensor) mesh of TP parameters while the model is fake. Mesh
    construction runs with fake mode suspended (it allocates nothing a rank keeps)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    from torch.distributed.device_mesh import DeviceMesh
    orig = DeviceMesh.__init__
    if getattr(orig, "_real", False):
        return

    def init(self, *a, **k):
        with unset_fake_temporarily():
            orig(self, *a, **k)
    init._real = True
    DeviceMesh.__init__ = init
    # reshard_after_forward=int builds its post-forward mesh from an index tensor too
    import torch.distributed.fsdp._fully_shard._fully_shard as fs
    post = fs._get_post_forward_mesh_info

    def post_forward_mesh_info(*a, **k):
        with unset_fake_temporarily():
            return post(*a, **k)
    fs._get_post_forward_mesh_info = post_forward_mesh_info


def untracked_sharding_propagation():
    """DTensor computes an op's output shape by running it on fake tensors of the global
    shape (`ShardingPropagator._propagate_tensor_meta_non_cached`), in the active fake mode;
    MemTracker skips those ops only when that mode is not the one it entered under. Under the
    probe's own FakeTensorMode they would be counted (loss parallel's full-vocabulary
    log-softmax, uncached per call): propagation gets a fake mode of its own."""
    import torch.distributed.tensor._sharding_prop as sp
    own = FakeTensorMode()
    sp.detect_fake_mode = lambda *a, **k: own


def no_causal_mask():
    """Under SDPA with one unpadded sequence per row transformers passes no mask (SDPA's
    is_causal path); build none where it would build it from a sharded sequence."""
    import transformers.masking_utils as mu
    mu.create_causal_mask = lambda *a, **k: None
    for name, mod in list(sys.modules.items()):
        if name.startswith("transformers.models.") and hasattr(mod, "create_causal_mask"):
            mod.create_causal_mask = mu.create_causal_mask


def cuda_flash_sdpa():
    """SDPA as CUDA runs it for a causal, unmasked call: the flash kernel
    (`aten._scaled_dot_product_flash_attention`, which keeps the output and the log-sum-exp
    for backward, and takes GQA's fewer K/V heads as they are). On CPU SDPA picks
    `_scaled_dot_product_flash_attention_for_cpu`, which context parallelism's ring attention
    does not handle (`_sdpa_handler` maps the CUDA flash / efficient / cuDNN ops only)."""
    import torch.nn.functional as F
    orig = F.scaled_dot_product_attention

    def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        if attn_mask is not None:
            return orig(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                        enable_gqa=enable_gqa)
        return torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, dropout_p, is_causal, False,
                                                                   scale=scale)[0]
    F.scaled_dot_product_attention = sdpa


def precision_policy(cfg: dict):
    """(weight dtype, MixedPrecisionPolicy or None, autocast dtype or None) of the config."""
    t, e = cfg.get("training", {}), cfg.get("engine", {})
    precision = t.get("precision", "amp_bf16")
    half = torch.float16 if "fp16" in precision else torch.bfloat16
    weight = {"fp32": torch.float32, "amp_bf16": torch.float32, "amp_fp16": torch.float32}.get(precision, half)
    if e.get("type") == "fsdp":
        param = e.get("param_dtype") or ({"amp_bf16": "bf16", "amp_fp16": "fp16"}.get(precision))
        reduce = e.get("reduce_dtype") or ("fp32" if precision.startswith("amp_") else None)
        if param or reduce:
            from torch.distributed.fsdp import MixedPrecisionPolicy
            return weight, MixedPrecisionPolicy(param_dtype=DTYPES.get(param), reduce_dtype=DTYPES.get(reduce)), None
        return weight, None, None
    return weight, None, (half if precision.startswith("amp_") else None)


def run(cfg: dict, rank: int, device: str) -> dict:
    lay = Layout(cfg, rank)
    t, e = cfg.get("training", {}), cfg.get("engine", {"type": "ddp"})
    model_cfg = hf_config(cfg.get("model", {}))
    engine = e.get("type", "ddp")
    fsdp = engine == "fsdp"
    if fsdp:
        assert int(e.get("fsdp_version", 2)) == 2, "the probe runs FSDP2 (FSDP1 needs an accelerator in torch 2.15)"
    weight_dtype, mp_policy, autocast_dtype = precision_policy(cfg)
    attention = t.get("attention", "sdpa")
    b, s = int(t.get("micro_batch_size", 1)), int(t.get("seq_len", 2048))
    ga = int(t.get("gradient_accumulation_steps", 1))
    init_group(rank, lay.num_gpus)
    mesh = lay.mesh()
    mesh["efsdp", "ep"]._flatten("dp_shard")
    if lay.cp > 1:
        # torchtitan shards parameters over data and context parallel ranks together
        # (parallel_dims.py: the `dp_shard_cp` mesh)
        mesh["efsdp", "ep", "cp"]._flatten("dp_shard_cp")
        shard_dim = "dp_shard_cp"
        cuda_flash_sdpa()
    else:
        shard_dim = "dp_shard"
    dp_mesh = mesh["dp_replicate", shard_dim] if lay.replicate > 1 else mesh[shard_dim]
    tp_mesh = mesh["tp"]
    if lay.tp > 1 or lay.pp > 1:
        no_causal_mask()
    real_device_meshes()
    if device == "fake":
        untracked_sharding_propagation()
    fake = FakeTensorMode(allow_non_fake_inputs=True) if device == "fake" else contextlib.nullcontext()
    with fake:
        torch.manual_seed(0)
        model = build_model(model_cfg, weight_dtype, attention, device)
        if t.get("activation_checkpointing", "none") == "full":
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
        n_layers = len(model.model.layers)
        first, last = lay.stage == 0, lay.stage == lay.pp - 1
        if lay.pp > 1:
            chunks = [Stage(model, ids, first=(lay.stage == 0 and v == 0), last=(lay.stage == lay.pp - 1 and v == lay.vpp - 1))
                      for v, ids in enumerate(stage_layers(n_layers, lay.pp, lay.vpp, lay.stage))]
            del model
            modules = chunks
        else:
            modules = [model]
        ep_plan = {}
        if lay.ep > 1:
            ep_plan = apply_ep(modules[0], mesh["ep"], tp_mesh)
        for m in modules:
            if lay.tp > 1:
                layers = m.layers if lay.pp > 1 else m.model.layers
                apply_tp(m, layers, tp_mesh, lay, first=getattr(m, "first", True), last=getattr(m, "last", True))
                if not lay.sp:
                    replicated_norms_forward(m)
        if fsdp:
            from torch.distributed.fsdp import CPUOffloadPolicy, OffloadPolicy, fully_shard
            raf = e.get("reshard_after_forward", True if lay.pp == 1 else False)
            offload = CPUOffloadPolicy(pin_memory=False) if e.get("cpu_offload") else OffloadPolicy()
            kw = dict(mesh=dp_mesh, reshard_after_forward=raf, offload_policy=offload)
            if mp_policy is not None:
                kw["mp_policy"] = mp_policy
            for m in modules:
                # dispatched experts first, on the expert-data-parallel mesh
                # (transformers distributed/fsdp.py apply_fully_sharded_data_parallelism)
                for name, style in ep_plan.items():
                    if style == "ep_dispatch_experts":
                        fully_shard(m.get_submodule(name), **dict(kw, mesh=mesh["efsdp"]))
                for layer in (m.layers if lay.pp > 1 else m.model.layers):
                    fully_shard(layer, **kw)
                fully_shard(m, **kw)
        params = [p for m in modules for p in m.parameters() if p.requires_grad]
        opt = make_optimizer(params, t.get("optimizer", "adamw"), t.get("optimizer_impl", "foreach"))
        vocab = model_cfg.get("vocab_size", 1000)
        ids = torch.randint(0, min(vocab, 1000), (b * (ga if lay.pp > 1 else 1), s))
        tracker = FSDPTracker(modules[0], opt) if fsdp and lay.pp == 1 else GlobalMemTracker()
        if not (fsdp and lay.pp == 1):
            tracker.track_external(*modules, opt, ids)
        else:
            tracker.track_inputs((ids,))
        phases = {}
        with tracker:
            ddp = None
            if engine == "ddp" and lay.num_gpus > 1:
                ddp = make_ddp(modules[0], e, dp_mesh)
                modules = [ddp]
            def amp():
                """torch.autocast for AMP without FSDP, around forward and the loss only
                (torchtitan train.py `maybe_enable_amp`; HF Trainer / accelerate call
                backward outside autocast too, so its weight-cast cache is cleared first)."""
                if autocast_dtype:
                    return torch.autocast("cpu", dtype=autocast_dtype)
                return contextlib.nullcontext()

            def train_context():
                """torchtitan's train context around forward, loss and backward:
                loss_parallel() (the cross-entropy of vocab-sharded logits)."""
                if lay.loss_parallel:
                    from torch.distributed.tensor.parallel import loss_parallel
                    return loss_parallel()
                return contextlib.nullcontext()
            act_dtype = (mp_policy.param_dtype if mp_policy is not None and mp_policy.param_dtype else weight_dtype)
            schedule = make_schedule(modules, lay, mesh, ga, b, s, model_cfg, act_dtype) if lay.pp > 1 else None
            for step in range(2):
                tracker.reset_mod_stats()
                if schedule is not None:
                    # the whole step runs inside the schedule; phases are its peak. As
                    # torchtitan, the outputs are not kept for the caller (return_outputs=False)
                    with train_context():
                        if first:
                            schedule.step(ids, return_outputs=False)
                        elif last:
                            schedule.step(target=ids, return_outputs=False)
                        else:
                            schedule.step(return_outputs=False)
                    mark(tracker, phases, f"backward{step}")
                else:
                    for micro in range(ga):
                        # the trackers refuse a module called twice in one iteration; only
                        # the global counts are kept, so the module stats restart
                        tracker.reset_mod_stats()
                        pos = torch.arange(s).unsqueeze(0).expand(b, s).contiguous()
                        labels = ids.clone()
                        with train_context(), cp_context(lay, mesh, [ids, labels, pos]):
                            with amp():
                                out = modules[0](input_ids=ids, labels=labels, use_cache=False, position_ids=pos)
                            loss = out.loss
                            mark(tracker, phases, f"forward{step}")
                            # the output (logits) is held through backward, as the single-GPU
                            # probe does (probe/probe.py)
                            loss.backward()
                            del out, loss
                        mark(tracker, phases, f"backward{step}")
                opt.step()
                opt.zero_grad(set_to_none=True)
                mark(tracker, phases, f"optimizer_step{step}")
    return {"phases": phases, "layout": lay}


def cp_context(lay: Layout, mesh, buffers):
    """torchtitan's context-parallel step (train.py `maybe_enable_context_parallel`): the
    inputs, labels and positions sharded on the sequence (head-tail load balanced), SDPA
    replaced by ring attention over the `cp` mesh."""
    if lay.cp == 1:
        return contextlib.nullcontext()
    from torch.distributed.tensor.experimental import context_parallel
    return context_parallel(mesh["cp"], buffers=buffers, buffer_seq_dims=[1] * len(buffers))


# ------------------------------------------------------------------------------ DeepSpeed

class ScalarFakeMode(FakeTensorMode):
    """FakeTensorMode that answers reads of a tensor's value (`.item()`, `bool(t)`): 1 for
    numbers, False for booleans. DeepSpeed reads values for checks that do not change what is
    allocated (gradient overflow and norm validity, rank agreement, Adam's step count); a
    fake tensor has no value to read."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            t = args[0]
            return False if t.dtype == torch.bool else (1.0 if t.is_floating_point() else 1)
        return super().__torch_dispatch__(func, types, args, kwargs)


def deepspeed_on_fake_tensors():
    """What DeepSpeed needs to run on FakeTensors: `module.to(cpu)` and `.bfloat16()` of a
    module already there and in that dtype return it unchanged (the real calls swap every
    parameter, which fake parameters refuse), and the value checks across ranks return their
    all-agree answer (the fake group carries no data)."""
    import deepspeed.runtime.zero.partitioned_param_coordinator as ppc
    import deepspeed.runtime.zero.stage3 as s3
    import deepspeed.runtime.zero.stage_1_and_2 as s12
    import deepspeed.runtime.zero.utils as zu
    to, bf16, half = nn.Module.to, nn.Module.bfloat16, nn.Module.half

    def same(self, dtype):
        return all(p.dtype == dtype for p in self.parameters() if p.is_floating_point())

    def module_to(self, *a, **k):
        device, dtype, _, _ = torch._C._nn._parse_to(*a, **k)
        if (device is None or device.type == "cpu") and (dtype is None or same(self, dtype)):
            return self
        return to(self, *a, **k)
    nn.Module.to = module_to
    nn.Module.bfloat16 = lambda self: self if same(self, torch.bfloat16) else bf16(self)
    nn.Module.half = lambda self: self if same(self, torch.float16) else half(self)
    s12.DeepSpeedZeroOptimizer.has_overflow = lambda self, *a, **k: False
    zu.assert_ints_same_as_other_ranks = ppc.assert_ints_same_as_other_ranks = lambda ints: None


def ds_config(cfg: dict) -> dict:
    """The ds_config.json of a config (DeepSpeed's defaults where the config says nothing)."""
    t, e = cfg.get("training", {}), cfg.get("engine", {})
    precision = t.get("precision", "amp_bf16")
    z = {"stage": int(e.get("zero_stage", 0))}
    for key in ("reduce_bucket_size", "overlap_comm", "contiguous_gradients", "stage3_prefetch_bucket_size",
                "stage3_max_live_parameters", "stage3_param_persistence_threshold", "sub_group_size"):
        if key in e:
            z[key] = e[key]
    for key in ("offload_optimizer", "offload_param"):
        if e.get(key, "none") != "none":
            z[key] = {"device": e[key]}
    ds = {"train_micro_batch_size_per_gpu": int(t.get("micro_batch_size", 1)),
          "gradient_accumulation_steps": int(t.get("gradient_accumulation_steps", 1)),
          "zero_allow_untested_optimizer": True, "zero_optimization": z, "steps_per_print": 10 ** 9}
    if precision in ("amp_bf16", "bf16"):
        ds["bf16"] = {"enabled": True}
    elif precision in ("amp_fp16", "fp16"):
        ds["fp16"] = {"enabled": True, "initial_scale_power": 16}
    return ds


def run_deepspeed(cfg: dict, rank: int, device: str) -> dict:
    """DeepSpeed ZeRO 0-3 on a transformers model: `deepspeed.initialize` with the config's
    ds_config, on DeepSpeed's CPU accelerator (DS_ACCELERATOR=cpu) over the fake group. The
    optimizer is torch's fused AdamW (no temporaries, as DeepSpeed's FusedAdam on CUDA),
    passed as a client optimizer."""
    lay = Layout(cfg, rank)
    assert lay.tp == lay.pp == lay.cp == lay.ep == 1, "the DeepSpeed probe runs data parallelism only"
    t = cfg.get("training", {})
    os.environ.update(DS_ACCELERATOR="cpu", RANK=str(rank), LOCAL_RANK=str(rank % 8),
                      WORLD_SIZE=str(lay.num_gpus), LOCAL_WORLD_SIZE="8")
    init_group(rank, lay.num_gpus)
    import deepspeed
    model_cfg = hf_config(cfg.get("model", {}))
    ds = ds_config(cfg)
    dtype = torch.bfloat16 if "bf16" in ds else torch.float16 if "fp16" in ds else torch.float32
    b, s = int(t.get("micro_batch_size", 1)), int(t.get("seq_len", 2048))
    ga = ds["gradient_accumulation_steps"]
    if device == "fake":
        deepspeed_on_fake_tensors()
    fake = ScalarFakeMode(allow_non_fake_inputs=True) if device == "fake" else contextlib.nullcontext()
    phases = {}
    with fake:
        torch.manual_seed(0)
        model = build_model(model_cfg, dtype, t.get("attention", "sdpa"), device)
        if t.get("activation_checkpointing", "none") == "full":
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
        opt = make_optimizer([p for p in model.parameters() if p.requires_grad], t.get("optimizer", "adamw"), "fused")
        ids = torch.randint(0, min(model_cfg.get("vocab_size", 1000), 1000), (b, s))
        tracker = GlobalMemTracker()
        tracker.track_external(model, opt, ids)
        with tracker:
            eng, _, _, _ = deepspeed.initialize(model=model, optimizer=opt, config=ds, dist_init_required=False)
            for step in range(2):
                tracker.reset_mod_stats()
                for micro in range(ga):
                    out = eng(input_ids=ids, labels=ids, use_cache=False)
                    loss = out.loss
                    mark(tracker, phases, f"forward{step}")
                    eng.backward(loss)
                    del out, loss
                    mark(tracker, phases, f"backward{step}")
                    eng.step()
                mark(tracker, phases, f"optimizer_step{step}")
    return {"phases": phases, "layout": lay}


class FSDPTracker:
    """FSDPMemTracker keeping only the global peak (see probe.GlobalMemTracker)."""

    def __new__(cls, mod, opt):
        from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker

        class _T(FSDPMemTracker):
            def _update_peak_stats(self, peak_state) -> None:
                GlobalMemTracker._update_peak_stats(self, peak_state)

            def _pre_fw_hook(self, module, inputs) -> None:
                GlobalMemTracker._pre_fw_hook(self, module, inputs)
        return _T(mod, opt)


def mark(tracker, phases: dict, name: str):
    """Records the peak since the last mark under `name` (the larger, for repeated marks of
    the same phase across micro-batches) and restarts the peak."""
    peak = list(tracker.get_tracker_snapshot("peak").values())
    snap = {}
    if peak:
        for k, v in peak[0].items():
            key = str(k).split(".")[-1]
            snap[CATEGORIES.get(key, key.lower())] = int(v)
    snap["total"] = snap.pop("Total", snap.pop("total", 0))
    if name not in phases or snap["total"] >= phases[name]["total"]:
        phases[name] = snap
    cur = tracker.get_tracker_snapshot("current")
    tracker._peak_mem_snap = cur
    tracker._peak_mem = {d: v["Total"] for d, v in cur.items()}


def make_ddp(model, e: dict, dp_mesh):
    """DistributedDataParallel on the fake group: no init-time broadcast (init_sync=False), a
    comm hook that completes with the bucket itself (an in-place all-reduce allocates nothing;
    the fake group's future carries no tensor), and no bucket rebuild after the first step
    (the rebuild reorders buckets by gradient readiness; it reads broadcast indices, and the
    buckets' total size is the same)."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    ddp = DDP(model, process_group=dp_mesh.get_group(), bucket_cap_mb=float(e.get("bucket_cap_mb", 25)),
              gradient_as_bucket_view=bool(e.get("gradient_as_bucket_view", False)), init_sync=BACKEND != "fake")
    if BACKEND != "fake":
        return ddp

    def hook(state, bucket):
        fut = torch.futures.Future()
        fut.set_result(bucket.buffer())
        return fut
    ddp.register_comm_hook(None, hook)

    class ReducerProxy:
        def __init__(self, r):
            self._r = r

        def __getattr__(self, n):
            return getattr(self._r, n)

        def _rebuild_buckets(self):
            return False
    ddp.reducer = ReducerProxy(ddp.reducer)
    return ddp


def make_schedule(modules, lay: Layout, mesh, ga: int, b: int, s: int, model_cfg: dict, act_dtype):
    """A torch.distributed.pipelining schedule over this rank's stage chunks (static shapes:
    the fake group cannot exchange shape metadata)."""
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining.schedules import Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B
    pp_group = mesh["pp"].get_group()
    h = model_cfg.get("hidden_size")
    stages = []
    for v, m in enumerate(modules):
        idx = v * lay.pp + lay.stage
        n = lay.pp * lay.vpp
        inp = torch.randint(0, 10, (b, s)) if idx == 0 else torch.empty(b, s, h, dtype=act_dtype, requires_grad=True)
        # requires_grad marks the activations whose gradients travel back between stages
        out = torch.empty(b, s, model_cfg.get("vocab_size") if idx == n - 1 else h, dtype=act_dtype,
                          requires_grad=True)
        stages.append(PipelineStage(m, idx, n, torch.device("cpu"), group=pp_group, input_args=(inp,), output_args=(out,)))

    def loss_fn(logits, target):
        return torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), target.flatten(0, 1))
    if lay.schedule == "gpipe":
        return ScheduleGPipe(stages[0], n_microbatches=ga, loss_fn=loss_fn)
    if lay.schedule == "interleaved_1f1b":
        return ScheduleInterleaved1F1B(stages, n_microbatches=ga, loss_fn=loss_fn)
    return Schedule1F1B(stages[0], n_microbatches=ga, loss_fn=loss_fn)


def probe(cfg: dict, rank: int, device: str) -> dict:
    start = time.time()
    cuda_semantics.install()
    if device == "fake":
        cuda_semantics.answer_data_checks_as_real()
        cuda_semantics.efficient_sdpa_for_unequal_head_dims()
    engine = cfg.get("engine", {}).get("type", "ddp")
    result = (run_deepspeed if engine == "deepspeed" else run)(cfg, rank, device)
    phases = result["phases"]
    lay = result["layout"]
    steady = {k.rstrip("1"): v for k, v in phases.items() if not k.endswith("0")}
    peak_phase = max(steady, key=lambda k: steady[k]["total"])
    return {
        "id": cfg.get("id", ""),
        "source": f"probe/dist_probe.py --device {device} --rank {rank}",
        "config": {k: v for k, v in cfg.items() if k not in ("id", "split")},
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "python": platform.python_version()},
        "seconds": round(time.time() - start, 1),
        "rank": rank,
        "coords": lay.coords,
        "measured": {
            "metric": "tensor_bytes",
            "peak_allocated_bytes": max(v["total"] for k, v in phases.items() if not k.endswith("0")),
            "peak_phase": peak_phase,
            "phases": steady,
        },
    }


def gloo_worker(rank: int, cfg: dict, port: int, out: str):
    """One process of a real multi-process CPU run (validation of the fake group)."""
    global BACKEND
    BACKEND = "gloo"
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    rec = probe(cfg, rank, "cpu")
    rec["source"] = f"probe/dist_probe.py --backend gloo (rank {rank} of {cfg['hardware']['num_gpus']} processes)"
    if rank == int(cfg.get("validate_rank", 0)):
        with open(out, "w") as f:
            json.dump(rec, f)
    dist.barrier()
    dist.destroy_process_group()


def run_gloo(cfg: dict) -> dict:
    import socket
    import tempfile
    import torch.multiprocessing as mp
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    mp.spawn(gloo_worker, args=(cfg, port, out), nprocs=int(cfg["hardware"]["num_gpus"]), join=True)
    rec = json.load(open(out))
    os.unlink(out)
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("configs", nargs="*")
    ap.add_argument("--grid")
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--device", choices=["fake", "cpu"], default="fake")
    ap.add_argument("--backend", choices=["fake", "gloo"], default="fake",
                    help="gloo: a real multi-process CPU run (one process per rank; validation)")
    ap.add_argument("--out")
    ap.add_argument("--jobs", type=int, default=1, help="configs measured at once (grid)")
    a = ap.parse_args()
    configs = [json.load(open(p)) for p in a.configs]
    if a.grid:
        configs += json.load(open(a.grid))
    if len(configs) == 1 and not a.grid:
        rec = run_gloo(configs[0]) if a.backend == "gloo" else probe(configs[0], a.rank, a.device)
        out = open(a.out, "a") if a.out else sys.stdout
        print(json.dumps(rec), file=out, flush=True)
        return
    run_grid(configs, a)


def run_one(cfg: dict, rank: int, device: str):
    """One rank of one config in its own process (a process initializes its group once)."""
    import subprocess
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({k: v for k, v in cfg.items() if k not in ("ranks", "split")}, f)
    cmd = [sys.executable, os.path.abspath(__file__), f.name, "--rank", str(rank), "--device", device]
    r = subprocess.run(cmd, capture_output=True, text=True)
    os.unlink(f.name)
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    if r.returncode != 0 or not lines:
        return None, (r.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(lines[-1]), None


def run_grid(configs, a):
    """Each config on each of its `ranks`; one record per config: the most loaded rank's
    measurement, every measured rank's peak under `ranks`, and the config's `split`.
    Configs whose id is already in --out are skipped (the run resumes)."""
    from concurrent.futures import ThreadPoolExecutor
    done = set()
    if a.out and os.path.exists(a.out):
        done = {json.loads(line)["id"] for line in open(a.out) if line.strip()}
    todo = [c for c in configs if c.get("id") not in done]

    def one(cfg):
        recs = []
        for rank in cfg.get("ranks", [a.rank]):
            rec, err = run_one(cfg, rank, a.device)
            if rec is None:
                return cfg, None, f"rank {rank}: {err}"
            recs.append(rec)
        top = max(recs, key=lambda r: r["measured"]["peak_allocated_bytes"])
        top["ranks"] = [{"rank": r["rank"], "coords": r["coords"],
                         "peak_allocated_bytes": r["measured"]["peak_allocated_bytes"],
                         "peak_phase": r["measured"]["peak_phase"]} for r in recs]
        top["seconds"] = round(sum(r["seconds"] for r in recs), 1)
        if "split" in cfg:
            top["split"] = cfg["split"]
        return cfg, top, None

    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for cfg, rec, err in pool.map(one, todo):
            if rec is None:
                print(f"{cfg.get('id')}: FAILED {err}", file=sys.stderr, flush=True)
                continue
            print(f"{cfg.get('id')}: {rec['measured']['peak_allocated_bytes'] / 2**30:.2f} GiB "
                  f"({rec['seconds']} s)", file=sys.stderr, flush=True)
            line = json.dumps(rec)
            if a.out:
                with open(a.out, "a") as f:
                    print(line, file=f)
            else:
                print(line, flush=True)


if __name__ == "__main__":
    main()
