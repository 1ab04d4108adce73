//! The training estimate: memory of the most loaded GPU, by component and by phase.
//!
//! For each candidate pipeline stage ([`crate::placement::stages`]) the model computes three
//! phases of a steady-state training step and keeps the stage and phase with the highest
//! allocation:
//!
//! * **forward**: the larger of the end of the forward pass (model states, every saved
//!   activation of every in-flight micro-batch, the loss's log-softmax) and a layer's own
//!   working set while it runs (`activations::forward_transient`);
//! * **backward**: the largest of three moments ([`Moment`]): the loss being differentiated
//!   (all activations plus the loss gradients), the last layer's backward (its temporaries
//!   and the output layer's weight gradient) and the end of backward (all gradients, the
//!   first layer's saved tensors and temporaries; under full recomputation its recomputed
//!   activations);
//! * **optimizer step**: model states, gradients and the optimizer's temporaries. The first
//!   step, where the optimizer allocates its states while the gradients exist, is this
//!   same phase; its forward and backward run without optimizer states, so the first step
//!   never peaks above the steady state (so measured in all 60 training probe records,
//!   `first_step` in `tests/reference/probe_records.jsonl`).
//!
//! Model states come from the engine ([`crate::engines`]); fixed overheads (CUDA context,
//! cuBLAS workspace, NCCL buffers, allocator reserve) are added by [`crate::report`].

use crate::activations::{self, ActCtx, ModelCode};
use crate::config::{Attention, Lora, Mode, PipelineSchedule, Precision, WeightFormat};
use crate::engines::{EngineModel, EngineNum, States};
use crate::loss::{LossMemory, loss_memory};
use crate::model::{FfnKind, NormKind, Shape};
use crate::placement::{LayerCache, RankParams, Stage, for_each_stage_group, rank_params, stages};
use crate::precision::StateBytes;
use crate::problem::Resolved;
use crate::report::{Component, Overheads, Phase, PhaseName, StageOutcome, assemble};
use crate::term::{Num, Term};
use crate::weights::{Storage, largest_quantized_matrix, stage_weights};

/// Estimates a validated training problem.
pub(crate) fn estimate_training<N: EngineNum>(r: &Resolved) -> crate::report::Assembly<'_, N> {
    let stages = stages(r);
    // several stages hold the same decoder layers: their sums are worked out once
    let mut cache = LayerCache::default();
    let mut cache = (stages.len() > 1).then_some(&mut cache);
    let outcomes: crate::report::Outcomes<N> = stages
        .iter()
        .map(|st| evaluate_stage(r, st, cache.as_deref_mut()))
        .collect();
    // report text: a numeric estimate builds none
    let warnings = if N::REPORT {
        training_warnings(r, &outcomes)
    } else {
        Vec::new()
    };
    let communicators = r.layout.communicators(Mode::Training);
    let trainable = match &r.lora_targets {
        Some(targets) => targets.total_params(&r.inventory),
        None => r.params.total,
    };
    assemble(
        r,
        Mode::Training,
        outcomes,
        Overheads {
            communicators,
            non_torch: None,
            nccl: None,
            reserve: true,
        },
        trainable,
        warnings,
    )
}

/// The estimate's warnings: the problem's, each stage's engine warnings (once), and the
/// training set-up's (logits gathered without loss parallelism, GPipe's in-flight
/// micro-batches, eager attention's scores at long sequences, paged optimizer states).
fn training_warnings<N: Num>(r: &Resolved, outcomes: &[StageOutcome<N>]) -> Vec<String> {
    let t = &r.config.training;
    let l = &r.layout;
    let mut warnings = r.warnings.clone();
    for o in outcomes {
        for w in &o.warnings {
            if !warnings.contains(w) {
                warnings.push(w.clone());
            }
        }
    }
    if l.tensor_parallel_size > 1 && !l.loss_parallel && r.model_code == ModelCode::Transformers {
        let logits = t.micro_batch_size * t.seq_len / l.context_parallel_size * r.arch.vocab_size;
        warnings.push(format!(
            "without loss_parallel every tensor-parallel rank gathers the logits of the whole vocabulary ({} per micro-batch in bf16, {} more in the fp32 loss): set parallelism.loss_parallel to keep them sharded.",
            crate::units::fmt_gib(2 * logits),
            crate::units::fmt_gib(8 * logits)
        ));
    }
    if l.pipeline_parallel_size > 1
        && l.pipeline_schedule == crate::config::PipelineSchedule::Gpipe
        && t.gradient_accumulation_steps > l.pipeline_parallel_size
    {
        warnings.push(format!(
            "GPipe keeps the activations of all {} micro-batches on every stage until backward; 1F1B keeps at most {} (parallelism.pipeline_schedule: 1f1b).",
            t.gradient_accumulation_steps, l.pipeline_parallel_size
        ));
    }
    if t.attention == Attention::Eager && t.seq_len >= 8192 {
        warnings
            .push("eager attention keeps b x heads x s^2 scores: consider sdpa or flash".into());
    }
    if t.optimizer.info().paged {
        warnings.push("paged optimizer states live in CUDA unified memory (counted under CPU memory here): they use free GPU memory and spill to CPU RAM under pressure, slowing the step".into());
    }
    warnings
}

/// The engine's model states with `b` bytes per element, and the optimizer step run inside
/// backward where configured: each parameter's step runs in its gradient hook, so only the
/// largest tensor's gradient exists at a time (torchtune `optimizer_in_bwd`).
fn engine_states<N: EngineNum>(
    engine: &dyn EngineModel,
    r: &Resolved,
    p: &RankParams,
    b: StateBytes,
) -> States<N> {
    let (n, bytes) = (N::n, N::bytes);
    let mut s = N::states(engine, r, p, b);
    if r.config.training.optimizer_in_backward {
        let largest = || n(p.largest_module, "params of the largest tensor");
        let source = "torchtune optimizer_in_bwd: each parameter steps in its gradient hook";
        s.gradients = Term::new(
            N::min([
                s.gradients.expr,
                crate::engines::grad_bytes::<N>(b) * largest(),
            ]),
            source,
        );
        let info = r.config.training.optimizer.info();
        s.step_temporaries = Term::new(
            N::min([
                s.step_temporaries.expr,
                n(info.foreach_temporaries as u64, "temporaries") * bytes(b.state) * largest(),
            ]),
            source,
        );
    }
    s
}

/// Autocast's half copies of the fp32 linear weights for the matmuls: all of them through
/// forward, or with full recomputation during backward the head's and one recomputed
/// layer's (the cache is cleared when forward leaves the autocast region; checkpointed
/// layers re-cast their weights when recomputed). PyTorch `torch.autocast`: the cast weight
/// is an input saved by the matmul. Under full recomputation nothing is saved in forward,
/// and only leaf weights are cached (`aten/src/ATen/autocast_mode.cpp` `cached_cast`:
/// `arg.is_leaf() && !arg.is_view()`): the routed experts' slices (`gate_up_proj[e]`,
/// a view) are cast per matmul and freed, so forward holds the dense copies only. Under
/// `torch.compile` with full recomputation the layers' casts are graph ops, freed with
/// each layer's forward and recomputed with it: forward's peak (the loss) holds the head's
/// copy, backward the head's and one layer's.
fn autocast_copies<N: Num>(r: &Resolved, p: &RankParams, b: StateBytes) -> (Term<N>, Term<N>) {
    let (n, bytes) = (N::n, N::bytes);
    if !r.config.engine.runs_autocast(&b) {
        return (Term::zero(), Term::zero());
    }
    let source =
        "torch.autocast: a half copy of each fp32 linear weight per matmul, saved for backward";
    let full = r
        .config
        .training
        .activation_checkpointing
        .checkpoints_layers();
    // transformers' fused routed experts multiply with `grouped_mm`, which autocast does not
    // cast (integrations/moe.py `_grouped_mm`): they run on the fp32 weights, no copies
    let experts = if r.model_code == crate::precision::ModelCode::Transformers {
        p.expert_linear
    } else {
        0
    };
    if !full {
        let all = bytes(b.autocast_weight_copy)
            * (n(
                p.linear - experts,
                "linear weights outside the routed experts",
            ) + n(p.tied_head, "tied head weights"))
            .label("");
        return (Term::new(all.clone(), source), Term::new(all, source));
    }
    let cached = bytes(b.autocast_weight_copy)
        * (n(
            p.linear - p.expert_linear,
            "linear weights outside the routed experts",
        ) + n(p.tied_head, "tied head weights"))
        .label("");
    let backward = bytes(b.autocast_weight_copy)
        * (n(p.root_linear, "head weights")
            + n(p.tied_head, "tied head weights")
            + n(p.layer_linear, "linear weights of one layer"))
        .label("");
    let source_full = "torch.autocast: cached half copies of the leaf linear weights (autocast_mode.cpp cached_cast); expert slices are views, cast per matmul";
    if r.config.training.compile {
        // a compiled layer's casts are ops of its graph, not autocast's cache: a
        // checkpointed compiled layer holds its copies while it runs, forward or recomputed;
        // only the head, outside the compiled layers, is cached
        let source = "torch.compile: a layer's weight casts are graph ops (recomputed with the checkpointed layer); torch.autocast caches the head's copy (autocast_mode.cpp cached_cast)";
        let head = bytes(b.autocast_weight_copy)
            * (n(p.root_linear, "head weights") + n(p.tied_head, "tied head weights")).label("");
        return (Term::new(head, source), Term::new(backward, source));
    }
    (
        Term::new(cached, source_full),
        Term::new(backward, source_full),
    )
}

/// The storage format of the frozen base weights under LoRA.
pub(crate) fn lora_base_format(r: &Resolved, lora: &Lora) -> WeightFormat {
    lora.base_weight_format
        .unwrap_or(if r.config.training.precision == Precision::Fp32 {
            WeightFormat::Fp32
        } else {
            WeightFormat::Bf16
        })
}

/// Model states under LoRA: the engine's rules applied to the adapters (trainable, in fp32
/// by default: PEFT `autocast_adapter_dtype=True`), and the frozen base weights in their
/// format, sharded and gathered as the engine shards and gathers weights (no gradients, no
/// optimizer states). Returns the states (weights: the frozen base), the adapter weights,
/// and the adapters' counts (for their autocast copies).
fn lora_states<N: EngineNum>(
    r: &Resolved,
    st: &Stage,
    base: &RankParams,
    lora: &Lora,
    targets: &crate::lora::Targets,
    persistence: u64,
) -> (States<N>, Term<N>, RankParams, StateBytes) {
    let n = N::n;
    let engine = r.config.engine.model();
    let tp = r.layout.tensor_parallel_size;
    let ep = r.layout.expert_parallel_size;
    let layout = r.config.training.optimizer.info().layout;
    let b = r.bytes;
    let adapter_bytes: u64 = if lora.adapters_fp32 || b.weight == 4 {
        4
    } else {
        2
    };
    let mut pa = RankParams::default();
    for_each_stage_group(r, st, |sg| {
        let g = sg.group;
        let one = targets.params(g, tp);
        if one == 0 {
            return;
        }
        let copies = sg.copies(ep) * sg.times;
        pa.dense += one * copies;
        pa.linear += one * copies;
        pa.largest_module = pa.largest_module.max(one);
        pa.largest_layer = pa.largest_layer.max(one);
        if one < persistence {
            pa.small += one * copies;
        }
        // A (r x in) and B (out x r)
        if let Shape::Linear {
            in_features,
            out_features,
            ..
        } = g.shape
        {
            pa.opt_dense.add(layout, lora.rank, in_features, copies);
            pa.opt_dense.add(layout, out_features, lora.rank, copies);
        }
    });
    let adapter_b = StateBytes {
        weight: adapter_bytes,
        grad: adapter_bytes,
        master: 0,
        state: adapter_bytes,
        grad_accum: 0,
        autocast_weight_copy: if b.autocast_weight_copy > 0 { 2 } else { 0 },
        fp8_weight_cache: 0,
        ..b
    };
    let mut s = engine_states(engine, r, &pa, adapter_b);
    let adapters = std::mem::replace(&mut s.weights, Term::zero());
    let adapters = Term::new(
        adapters.expr,
        crate::term::source!(N;
            "PEFT LoRA (Hu et al. 2021): A (r x in) and B (out x r) per targeted module; {}",
            adapters.source
        ),
    );
    let format = lora_base_format(r, lora);
    let frozen: Term<N> = stage_weights(
        r,
        st,
        Storage {
            format,
            group: 64,
            zero_point: true,
            double_quant: true,
            experts_only: lora.base_quantized_modules == crate::config::QuantizedModules::Experts,
        },
    );
    let shard = engine.weight_shard(&r.layout);
    let frozen_bytes = frozen.bytes();
    s.weights = Term::new(
        frozen.expr.div_ceil(n(shard, "GPUs sharing the weights")),
        crate::term::source!(N; "frozen base model (PEFT LoRA); {}", frozen.source),
    );
    if shard > 1 {
        // the frozen base is gathered like full weights (in its stored format)
        s.gathered = Term::new(
            (N::gathered_elements(engine, base).label("params gathered")
                * n(frozen_bytes, "B of frozen weights"))
            .div_floor(n(base.total(), "params")),
            "the frozen base gathered as the engine gathers weights, in its stored format",
        );
    }
    (s, adapters, pa, adapter_b)
}

/// The activation context for a GPU.
fn act_ctx(r: &Resolved) -> ActCtx<'_> {
    let t = &r.config.training;
    let l = &r.layout;
    let b = &r.bytes;
    let autocast = r.config.engine.runs_autocast(b);
    let half_lora_base = t
        .lora
        .as_ref()
        .is_some_and(|lo| lora_base_format(r, lo) != WeightFormat::Fp32);
    ActCtx {
        arch: &r.arch,
        family: r.arch.family(),
        b: t.micro_batch_size,
        s: t.seq_len / l.context_parallel_size,
        s_full: t.seq_len,
        tp: l.tensor_parallel_size,
        sp: l.sequence_parallel,
        ep: l.expert_parallel_size,
        etp: l.expert_tensor_parallel_size,
        code: r.model_code,
        attention: t.attention,
        recompute: t.activation_checkpointing,
        act: b.activation,
        // the residual stream is in the weights' dtype: fp32 under autocast, except for a
        // LoRA base stored in half (autocast then only casts the fp32 adapters)
        residual: if autocast && !half_lora_base {
            4
        } else {
            b.activation
        },
        linear_input: b.linear_input,
        autocast,
        fp16: matches!(t.precision, Precision::AmpFp16 | Precision::Fp16),
        lora: t.lora.as_ref().zip(r.lora_targets.as_ref()),
        compiled: t.compile,
        repeat_kv: r.config.engine.model().repeats_kv(),
    }
}

/// The activations of a stage and its layers' transients.
struct ActivationResult<N: Num> {
    /// Every saved activation of every in-flight micro-batch.
    total: Term<N>,
    /// When every forward runs before the first backward: the activations still saved
    /// once the first micro-batch (model chunk) has run its backward.
    after_first_backward: Term<N>,
    /// Extra bytes while a layer runs its backward (see `activations::backward_transient`).
    transient: N,
    /// Extra bytes while a layer runs its forward (see `activations::forward_transient`).
    forward_transient: N,
    /// What one layer keeps for backward when it is not recomputed (its saved tensors
    /// stay alive while its own backward runs); 0 under full recomputation, where the
    /// backward transient holds the recomputed ones.
    layer_saved: N,
    /// The layer inputs kept in pinned host memory (`training.activation_offloading`).
    offloaded: Term<N>,
}

fn stage_activations<N: Num>(r: &Resolved, st: &Stage, c: &ActCtx) -> ActivationResult<N> {
    let (n, bytes) = (N::n, N::bytes);
    // the stage's saved activations per micro-batch: a sum built term by term (`+` flattens
    // into one sum, as `Expr::sum` of the list would); the per-layer-kind maxima from
    // fixed slots (dense, MoE, MTP), so that nothing is allocated
    let mut per = N::zero();
    let mut transients: [Option<N>; 3] = Default::default();
    let mut forward: [Option<N>; 3] = Default::default();
    let mut saved: [Option<N>; 2] = Default::default();
    let offload = r.config.training.activation_offloading;
    let mut host = N::zero();
    for (i, (kind, count, label)) in [
        (FfnKind::Dense, st.dense_layers, "dense layers"),
        (FfnKind::Moe, st.moe_layers, "MoE layers"),
    ]
    .into_iter()
    .enumerate()
    {
        if count == 0 {
            continue;
        }
        let one = activations::layer_bytes(c, kind);
        if offload {
            // save_on_cpu packs the checkpoint's input to host memory; backward unpacks one
            // layer's input to the GPU at a time, for its recomputation
            let input = activations::layer_input_bytes(c);
            per = per + n(count, label) * n(one - input, "B per layer on the GPU");
            host = host + n(count, label) * n(input, "B of layer input");
            transients[i] = Some(
                activations::backward_transient::<N>(c, kind) + n(input, "B of the unpacked input"),
            );
        } else {
            per = per + n(count, label) * n(one, "B per layer");
            transients[i] = Some(activations::backward_transient(c, kind));
        }
        forward[i] = Some(activations::forward_transient(c, kind));
        if !c.recompute.checkpoints_layers() {
            saved[i] = Some(n(one, "B saved by one layer"));
        }
    }
    if st.mtp_layers > 0 {
        // Megatron-Core multi-token prediction (multi_token_prediction.py): per module, the
        // enorm / hnorm outputs concatenated into eh_proj's input (b s 2h), a decoder
        // layer, and the final layernorm
        let kind = r.arch.ffn_kind(r.arch.num_hidden_layers);
        let sp = if c.sp { c.tp } else { 1 };
        let extra = c.b * c.s * r.arch.hidden_size * c.act * 3 / sp
            + c.b * c.s * 2 * r.arch.hidden_size * c.linear_input / sp;
        per = per
            + n(st.mtp_layers, "MTP modules")
                * (n(activations::layer_bytes(c, kind), "B per layer")
                    + n(extra, "B of MTP norms and projection input"))
                .label("");
        transients[2] = Some(activations::backward_transient(c, kind));
        forward[2] = Some(activations::forward_transient(c, kind));
    }
    let mask = activations::sliding_mask_bytes(c);
    if mask > 0 {
        let (_, sliding) = r.layout.stage_layer_kinds(&r.arch, st.index);
        per = per
            + n(sliding, "sliding-window layers")
                * n(mask, "B of SDPA mask and repeated K V per layer");
    }
    let tokens = || n(c.b * c.s, "tokens");
    let h = r.arch.hidden_size;
    if r.model_code == ModelCode::Transformers && r.arch.learned_position_embeddings == 0 {
        // rotary cos and sin (b x s x rotary dim each), computed once per forward in the
        // residual dtype and kept by every layer's rotary multiplications
        // (transformers LlamaRotaryEmbedding.forward / apply_rotary_pos_emb)
        let rotary_dim = r
            .arch
            .mla
            .as_ref()
            .map_or(r.arch.head_dim, |m| m.qk_rope_head_dim);
        per = per
            + n(2, "rotary tables") * tokens() * n(rotary_dim, "rotary dims") * bytes(c.residual);
    }
    let sp = n(if c.sp { c.tp } else { 1 }, "sequence-parallel ranks");
    if st.has_embedding {
        // input ids (int64) and the embedding dropout mask (Megatron theoretical_memory_usage.py)
        per = per + bytes(8) * n(c.b * c.s, "input ids");
        if r.arch.hidden_dropout > 0.0 {
            per = per + (tokens() * n(h, "hidden")).div_floor(sp.clone());
        }
    }
    if st.has_head {
        // final norm and the LM head input
        let head = match r.model_code {
            ModelCode::Megatron => {
                (n(2, "tensors") * tokens() * n(h, "hidden") * bytes(c.act)).div_floor(sp)
            }
            ModelCode::Transformers => {
                let norm = match r.arch.norm {
                    // frozen under LoRA: `weight * x` keeps only the weight
                    NormKind::RmsNorm if c.lora.is_some() => {
                        tokens() * n(h, "hidden") * bytes(4) + tokens() * bytes(4)
                    }
                    NormKind::RmsNorm => {
                        tokens() * n(h, "hidden") * (bytes(4) + bytes(c.residual)).label("")
                            + tokens() * bytes(4)
                    }
                    NormKind::LayerNorm => {
                        tokens() * n(h, "hidden") * bytes(c.residual) + bytes(8) * tokens()
                    }
                };
                norm + tokens() * n(h, "hidden") * bytes(c.linear_input)
            }
        };
        per = per + head;
    }
    let (num, den) = st.inflight;
    let total = if num == den {
        per.clone()
    } else if den == 1 {
        per.clone().label("") * n(num, "in-flight micro-batches")
    } else {
        (per.clone().label("") * n(num, "").over(n(den, "")).label("in-flight micro-batches"))
            .floor()
    };
    // after the first backward of a schedule that ran every forward first: the other
    // in-flight micro-batches (model chunks) still saved
    let rest = if den == 1 {
        per * n(num.saturating_sub(1), "other in-flight micro-batches")
    } else {
        (per * n(num.saturating_sub(1), "")
            .over(n(den, ""))
            .label("other in-flight micro-batches"))
        .floor()
    };
    let (total, rest) = match pipeline_sends::<N>(r, st, c) {
        Some(sends) => (total + sends.clone(), rest + sends),
        None => (total, rest),
    };
    let (total, rest) = match pipeline_losses::<N>(r, st, c) {
        Some((all, after)) => (total + all, rest + after),
        None => (total, rest),
    };
    let source = "tensors saved for backward per layer: Korthikanti et al. 2022 Table 2 (Megatron), transformers module internals (core/src/activations.rs layer_saved); in-flight micro-batches: Narayanan et al. 2021 Sec. 2.2";
    ActivationResult {
        after_first_backward: Term::new(rest, source),
        total: Term::new(
            total,
            "tensors saved for backward per layer: Korthikanti et al. 2022 Table 2 (Megatron), transformers module internals (core/src/activations.rs layer_saved); in-flight micro-batches: Narayanan et al. 2021 Sec. 2.2",
        ),
        transient: activations::max_bytes(transients.iter_mut().filter_map(Option::take)),
        forward_transient: activations::max_bytes(forward.iter_mut().filter_map(Option::take)),
        layer_saved: activations::max_bytes(saved.iter_mut().filter_map(Option::take)),
        offloaded: Term::new(
            host,
            "torch.autograd.graph.save_on_cpu (transformers activation_checkpointing_enable(offload=True), torchtune activation offloading): each checkpointed layer's input in pinned host memory",
        ),
    }
}

/// Stage-boundary tensors (`micro-batch x sequence x hidden`, residual dtype) that
/// torch.distributed.pipelining keeps referenced by pending sends (torch 2.15
/// `pipelining/schedules.py`): GPipe waits for its backward sends (the input gradients sent
/// to the previous stage) only after the last micro-batch (`bwd_sends_to_wait`), so every
/// stage but the first holds `ga - 1` of them at its last backward; the interleaved runtime
/// (`_add_send_waits`) waits for a backward send only at the end of the step, so a rank
/// holds one per micro-batch of each model chunk that is not the first virtual stage, less
/// the one being computed. 1F1B waits for each send before the next one. Megatron's p2p
/// communication waits for its sends at once.
fn pipeline_sends<N: Num>(r: &Resolved, st: &Stage, c: &ActCtx) -> Option<N> {
    let (n, bytes) = (N::n, N::bytes);
    let l = &r.layout;
    let pp = l.pipeline_parallel_size;
    if pp == 1 || r.model_code == ModelCode::Megatron {
        return None;
    }
    let ga = r.config.training.gradient_accumulation_steps;
    let vpp = l.virtual_pipeline_parallel_size.max(1);
    let held = match l.pipeline_schedule {
        PipelineSchedule::Gpipe if st.index > 0 => ga - 1,
        PipelineSchedule::Interleaved1F1B => {
            let chunks = if st.index == 0 { vpp - 1 } else { vpp };
            (chunks * ga).saturating_sub(1)
        }
        _ => 0,
    };
    if held == 0 {
        return None;
    }
    let sp = if c.sp { c.tp } else { 1 };
    Some(
        n(held, "input gradients awaiting their pipeline sends")
            * (n(c.b * c.s, "tokens") * n(r.arch.hidden_size, "hidden") * bytes(c.residual))
                .div_floor(n(sp, "sequence-parallel ranks"))
                .label(""),
    )
}

/// The loss tensors of the last stage's other in-flight micro-batches: a pipeline schedule
/// computes each micro-batch's loss right after its forward (torch.distributed.pipelining
/// `_maybe_compute_loss`), so until that micro-batch's backward the stage keeps its output
/// logits (`_forward_chunk_states`, detached only after backward) and the cross-entropy's
/// saved fp32 log-softmax. The micro-batch in backward is counted by the loss terms.
/// Returns (every other in-flight one, those after the first backward). Megatron computes
/// the loss the same way but in vocab-parallel fp32 (not modelled here).
fn pipeline_losses<N: Num>(r: &Resolved, st: &Stage, c: &ActCtx) -> Option<(N, N)> {
    let (n, bytes) = (N::n, N::bytes);
    let l = &r.layout;
    if l.pipeline_parallel_size == 1 || !st.has_head || r.model_code == ModelCode::Megatron {
        return None;
    }
    let (num, den) = st.inflight;
    let micro_batches = num / den; // in-flight micro-batches of the head's model chunk
    if micro_batches < 2 {
        return None;
    }
    let one = || {
        n(c.b * c.s, "tokens")
            * n(r.arch.vocab_size.div_ceil(c.tp), "vocab")
            * (bytes(c.act) + bytes(4)).label("")
    };
    let all = n(
        micro_batches - 1,
        "other in-flight micro-batches' logits and log-softmax",
    ) * one().label("");
    let after = n(
        micro_batches - 2,
        "other in-flight micro-batches' logits and log-softmax",
    ) * one().label("");
    Some((all, after))
}

/// The moments of backward the model evaluates; the phase is the largest.
#[derive(Debug, Clone, Copy)]
enum Moment {
    /// The loss is differentiated: every activation is still saved and the loss gradients
    /// are at their peak, before any layer runs.
    Loss,
    /// The last layer's backward: its temporaries on top of the saved activations, the
    /// logits the caller still holds and the output layer's weight gradient.
    LastLayer,
    /// The end: every gradient written, plus the first layer's temporaries; with tied
    /// embeddings the output layer's gradient waits in autograd's input buffer until the
    /// embedding's own gradient arrives and is added to it in place
    /// (torch/csrc/autograd/input_buffer.cpp), so one extra vocab x hidden gradient is alive.
    End,
    /// Backward starts by all-gathering a resharded root unit again (FSDP2), before the
    /// loss is differentiated.
    Regather,
    /// After autograd, the engine's epilogue: every gradient, the logits still held, and
    /// the buffers the engine builds then (DeepSpeed ZeRO-1's gradient partition).
    Epilogue,
}

fn evaluate_stage<N: EngineNum>(
    r: &Resolved,
    st: &Stage,
    cache: Option<&mut LayerCache>,
) -> StageOutcome<N> {
    let (n, bytes) = (N::n, N::bytes);
    let engine = r.config.engine.model();
    let persistence = engine.persistence_threshold();
    let p = rank_params(r, st, persistence, cache);
    // LoRA with its targets on the model (resolved with `training.lora`)
    let lora = r.config.training.lora.as_ref().zip(r.lora_targets.as_ref());
    let (mut s, adapter_weights, (autocast, autocast_backward)) = match lora {
        None => {
            let s = engine_states(engine, r, &p, r.bytes);
            let copies = autocast_copies(r, &p, r.bytes);
            (s, Term::zero(), copies)
        }
        Some((lo, targets)) => {
            let (s, adapters, pa, ab) = lora_states(r, st, &p, lo, targets, persistence);
            let copies = autocast_copies(r, &pa, ab);
            (s, adapters, copies)
        }
    };
    if r.config.training.optimizer.info().paged && !s.optimizer.is_zero() {
        // bitsandbytes paged optimizers allocate their states with cudaMallocManaged
        // (bitsandbytes/functional.py get_paged): outside PyTorch's allocator, so not in
        // max_memory_allocated / reserved, and evicted to CPU RAM when the GPU is full
        let paged = std::mem::replace(&mut s.optimizer, Term::zero());
        s.cpu = s.cpu
            + Term::new(
                paged.expr,
                "bitsandbytes get_paged (cudaMallocManaged): paged optimizer states in CUDA unified memory, outside the PyTorch peak (GPU when free, else CPU RAM)",
            );
    }
    // QLoRA / quantized bases: bitsandbytes dequantizes each linear weight to 16 bits for its
    // matmul, forward and backward (MatMul4Bit): one layer's worth at a time
    let dequant = match lora {
        Some((lo, _))
            if !matches!(
                lora_base_format(r, lo),
                WeightFormat::Bf16 | WeightFormat::Fp16 | WeightFormat::Fp32
            ) =>
        {
            let (rows, cols) = largest_quantized_matrix(r, st);
            Term::new(
                bytes(2) * n(rows, "rows") * n(cols, "cols of the largest quantized matrix"),
                "bitsandbytes MatMul4Bit / MatMul8bitLt: each quantized weight dequantized to 16 bits for its matmul, one at a time",
            )
        }
        _ => Term::zero(),
    };
    let c = act_ctx(r);
    let act = stage_activations::<N>(r, st, &c);
    if !act.offloaded.is_zero() {
        s.cpu = s.cpu.clone() + act.offloaded.clone();
    }
    let loss = if st.has_head {
        let l = loss_memory::<N>(r, &c);
        if st.mtp_layers > 0 {
            // every MTP depth computes its own logits and cross-entropy on the last stage
            // (Megatron-Core process_mtp_loss); each depth's fp32 softmax is kept for its
            // backward
            let depths = 1 + st.mtp_layers;
            let times = |t: Term<N>| Term {
                expr: n(depths, "loss depths main and MTP") * t.expr.label(""),
                source: t.source,
            };
            LossMemory {
                forward: times(l.forward.clone()),
                backward: Term {
                    expr: l.backward.expr.clone()
                        + n(st.mtp_layers, "MTP depths") * l.forward.expr.clone().label(""),
                    source: l.backward.source.clone(),
                },
                kept: l.kept,
            }
        } else {
            l
        }
    } else {
        LossMemory::none()
    };
    let keep_grads = (r.config.training.gradient_accumulation_steps > 1
        && !s.unsharded_accumulation)
        || s.grads_persistent;
    // an absent term, lent where a moment has none
    let none = Term::zero();
    let grads_fwd = if keep_grads { &s.gradients } else { &none };
    let common = |ph: &mut Phase<N>| {
        ph.put(Component::Weights, &s.weights)
            .put(Component::MasterWeights, &s.master)
            .put(Component::OptimizerStates, &s.optimizer)
            .put(Component::CommunicationBuffers, &s.comm)
            .put(Component::AdapterWeights, &adapter_weights);
    };
    // forward: the larger of the loss computation at the end and a layer's own working
    // set while it runs (eager attention scores, the MLP under full recomputation)
    // gradients accumulated unsharded over micro-batches (FSDP2 under pipeline
    // parallelism) exist once the stage has run a backward; when its schedule runs every
    // forward before the first backward (GPipe, or a warm-up covering all micro-batches)
    // the forwards and the first backward's start see none, only the end of backward
    let (inflight, per_mb) = st.inflight;
    let forwards_first = inflight >= r.config.training.gradient_accumulation_steps * per_mb;
    let accumulated_fwd = match s.gather_moments.as_deref() {
        Some(g) if !forwards_first => &g.accumulated,
        _ => &none,
    };
    let mut fwd = Phase::<N>::new(PhaseName::Forward);
    common(&mut fwd);
    if act.forward_transient.to_u64() > loss.forward.bytes() {
        fwd.set(
            Component::ForwardTemporaries,
            Term::new(
                act.forward_transient.clone(),
                "core/src/activations.rs forward_transient: one layer's own working set while it runs forward (transformers eager_attention_forward scores and softmax; the MLP under full recomputation), larger than the loss computation",
            ),
        );
    } else {
        fwd.put(Component::Logits, &loss.forward);
    }
    fwd.put(Component::Gradients, grads_fwd)
        .put(Component::Activations, &act.total);
    match s.gather_moments.as_deref() {
        Some(g) => fwd.put_sum(
            Component::GatheredParameters,
            [&g.forward_end, accumulated_fwd],
        ),
        None => fwd.put(Component::GatheredParameters, &s.gathered),
    }
    .set(Component::AutocastWeightCopies, autocast)
    .put(Component::DequantizationBuffers, &dequant);
    if let Some(g) = s.gather_moments.as_deref() {
        // the first layer's all-gather, before any activation is kept
        let mut start = Phase::new(PhaseName::Forward);
        common(&mut start);
        start.put(Component::Gradients, grads_fwd).put_sum(
            Component::GatheredParameters,
            [&g.forward_start, accumulated_fwd],
        );
        if start.allocated() > fwd.allocated() {
            fwd = start;
        }
    }

    // backward: the largest of three moments
    let head_grad = if st.has_head && lora.is_none() && r.model_code != ModelCode::Megatron {
        Term::new(
            n(
                r.arch.vocab_size.div_ceil(r.layout.tensor_parallel_size),
                "vocab rows",
            ) * n(r.arch.hidden_size, "hidden")
                * bytes(r.bytes.weight),
            "the output layer's weight gradient, written during the last layer's backward",
        )
    } else {
        Term::zero()
    };
    let tied_extra = if r.arch.tie_word_embeddings && st.has_embedding {
        Term::new(
            head_grad.expr.clone(),
            "torch/csrc/autograd/input_buffer.cpp: the tied output layer's gradient waits for the embedding's",
        )
    } else {
        Term::zero()
    };
    // the gradients alive at the last layer's backward: those kept across micro-batches,
    // else the output layer's (never more than all of them); an engine with per-moment
    // gathered memory counts the output layer's unsharded gradient there
    let head_or_all;
    let grads_last_layer = if keep_grads {
        &s.gradients
    } else if s.gather_moments.is_some() {
        &none
    } else {
        head_or_all = Term {
            expr: N::min([head_grad.expr.clone(), s.gradients.expr.clone()]),
            source: head_grad.source.clone(),
        };
        &head_or_all
    };
    let transient_source = "core/src/activations.rs backward_transient: one layer's gradient intermediates (and under full recomputation its recomputed activations)";
    // the scenarios of backward: every in-flight micro-batch's activations with the
    // gradients accumulated so far; when every forward precedes the first backward, that
    // first backward (no accumulated gradient yet) and the ones after it (every gradient
    // written, the other micro-batches' activations still saved)
    let accumulates = s
        .gather_moments
        .as_ref()
        .is_some_and(|g| !g.accumulated.is_zero());
    let scenarios = if forwards_first && accumulates {
        [
            Some((&act.total, false)),
            Some((&act.after_first_backward, true)),
        ]
    } else {
        [Some((&act.total, true)), None]
    };
    let tied_extra = if s.gather_moments.is_some() {
        Term::zero()
    } else {
        tied_extra
    };
    // accumulated unsharded (pipeline micro-batches without gradient sync): no sharded
    // gradient exists until the final reduce-scatter frees the unsharded ones
    let end_grads = if s.unsharded_accumulation {
        &none
    } else {
        &s.gradients
    };
    let mut best: Option<Phase<N>> = None;
    for (act_total, acc_on) in scenarios.into_iter().flatten() {
        // the gathered memory of each moment (the sum of two terms): per-moment for FSDP2,
        // else the same throughout
        let gathered_parts = |m: Moment| -> [&Term<N>; 2] {
            let Some(g) = s.gather_moments.as_deref() else {
                return match m {
                    Moment::Regather => [&none, &none],
                    _ => [&s.gathered, &s.gathered_grads],
                };
            };
            let acc = if acc_on { &g.accumulated } else { &none };
            match m {
                Moment::Loss => [&g.backward_start, acc],
                Moment::Regather => [g.regather.as_ref().unwrap_or(&none), acc],
                Moment::LastLayer => [&g.layer_backward, acc],
                Moment::End | Moment::Epilogue => [&g.backward_end, &g.accumulated],
            }
        };
        let gathered_bytes = |m: Moment| -> u64 {
            let [a, b] = gathered_parts(m);
            a.bytes().saturating_add(b.bytes())
        };
        let moments = [
            (
                Moment::Regather,
                match s.gather_moments.as_ref().and_then(|g| g.regather.as_ref()) {
                    Some(t) => {
                        act_total.bytes()
                            + autocast_backward.bytes()
                            + grads_fwd.bytes()
                            + loss.kept.bytes()
                            + t.bytes()
                    }
                    None => 0,
                },
            ),
            (
                Moment::Loss,
                act_total.bytes()
                    + autocast_backward.bytes()
                    + grads_fwd.bytes()
                    + loss.backward.bytes()
                    + gathered_bytes(Moment::Loss),
            ),
            (
                Moment::LastLayer,
                act_total.bytes()
                    + autocast_backward.bytes()
                    + grads_last_layer.bytes()
                    + loss.kept.bytes()
                    + act.transient.to_u64()
                    + s.backward_buffers.bytes()
                    + gathered_bytes(Moment::LastLayer),
            ),
            (
                Moment::End,
                end_grads.bytes()
                    + tied_extra.bytes()
                    + loss.kept.bytes()
                    + act.transient.to_u64()
                    + act.layer_saved.to_u64()
                    + s.backward_buffers.bytes()
                    + gathered_bytes(Moment::End),
            ),
            (
                Moment::Epilogue,
                if s.end_of_backward.is_zero() {
                    0
                } else {
                    s.gradients.bytes()
                        + loss.kept.bytes()
                        + s.backward_buffers.bytes()
                        + s.end_of_backward.bytes()
                        + gathered_bytes(Moment::Epilogue)
                },
            ),
        ];
        // the last of the largest (as `Iterator::max_by_key`)
        let moment = moments
            .iter()
            .fold(moments[0], |best, m| if m.1 >= best.1 { *m } else { best })
            .0;
        let mut bwd = Phase::new(PhaseName::Backward);
        common(&mut bwd);
        match moment {
            Moment::Regather => {
                bwd.put(Component::Gradients, grads_fwd)
                    .put(Component::Logits, &loss.kept)
                    .put(Component::Activations, act_total)
                    .put(Component::AutocastWeightCopies, &autocast_backward);
            }
            Moment::Loss => {
                bwd.put(Component::Gradients, grads_fwd)
                    .put(Component::Logits, &loss.backward)
                    .put(Component::Activations, act_total)
                    .put(Component::AutocastWeightCopies, &autocast_backward);
            }
            Moment::LastLayer => {
                bwd.put(Component::Gradients, grads_last_layer)
                    .put(Component::Logits, &loss.kept)
                    .put(Component::Activations, act_total)
                    .put(Component::AutocastWeightCopies, &autocast_backward)
                    .set(
                        Component::BackwardTemporaries,
                        Term::new(
                            act.transient.clone(),
                            crate::term::source!(N; "the last layer's backward: {transient_source}"),
                        ),
                    );
            }
            Moment::End => {
                bwd.put_sum(Component::Gradients, [end_grads, &tied_extra])
                    .put(Component::Logits, &loss.kept)
                    .set(
                        Component::BackwardTemporaries,
                        Term::new(
                            act.transient.clone() + act.layer_saved.clone(),
                            crate::term::source!(N; "the first layer's backward at the end of backward, with the tensors it saved: {transient_source}"),
                        ),
                    );
            }
            Moment::Epilogue => {
                bwd.put(Component::Gradients, &s.gradients)
                    .put(Component::Logits, &loss.kept);
            }
        }
        bwd.put_sum(Component::GatheredParameters, gathered_parts(moment));
        match moment {
            // the buckets are allocated by the first gradient's hook
            Moment::Loss | Moment::Regather => bwd.put(Component::CommunicationBuffers, &s.comm),
            Moment::LastLayer | Moment::End => bwd.put_sum(
                Component::CommunicationBuffers,
                [&s.comm, &s.backward_buffers],
            ),
            Moment::Epilogue => bwd.put_sum(
                Component::CommunicationBuffers,
                [&s.comm, &s.backward_buffers, &s.end_of_backward],
            ),
        }
        .put(Component::DequantizationBuffers, &dequant);
        if best
            .as_ref()
            .is_none_or(|b| bwd.allocated() > b.allocated())
        {
            best = Some(bwd);
        }
    }
    let bwd = best.unwrap_or_else(|| Phase::new(PhaseName::Backward));

    let mut step = Phase::new(PhaseName::OptimizerStep);
    common(&mut step);
    step.put(
        Component::Gradients,
        s.step_gradients.as_ref().unwrap_or(&s.gradients),
    )
    .put(Component::OptimizerTemporaries, &s.step_temporaries);

    StageOutcome {
        warnings: std::mem::take(&mut s.warnings),
        stage: st.index,
        layers: st.layers(),
        params_on_gpu: p.total(),
        phases: smallvec::smallvec![fwd, bwd, step],
        cpu: s.cpu,
        nvme: s.nvme,
        serving: None,
    }
}
