//! FSDP2 (`torch.distributed.fsdp.fully_shard`): every parameter a DTensor sharded on dim 0
//! over the shard group, one FSDP unit per decoder layer plus the root (embeddings, final
//! norm, LM head: torchtitan, accelerate `fsdp_version: 2`, torchtune).
//!
//! What a rank allocates (torch/distributed/fsdp/_fully_shard, torch 2.15):
//! * `_fsdp_param.py` `_init_sharded_param`: each parameter's shard is `chunks[0]` of
//!   `torch.chunk(param, shard ranks, dim=0)`, padded to that size on every rank:
//!   `ceil(dim0 / ranks)` rows, in the parameter's own dtype (fp32 under AMP). A fused
//!   `[experts, ...]` tensor with fewer experts than ranks holds a whole expert row per
//!   rank (padding) instead of `1 / ranks` of the tensor.
//! * `_fsdp_collectives.py` `foreach_all_gather` / `foreach_all_gather_copy_out`: a unit's
//!   shards are gathered into one flat buffer of `ranks x padded shard` elements in
//!   `MixedPrecisionPolicy.param_dtype` and copied out into each parameter's padded
//!   unsharded tensor; the buffer is freed after the copy.
//! * `_fsdp_state.py`: the root unit is not resharded after forward; a decoder layer is
//!   resharded after its forward (`reshard_after_forward=True`), kept (`False`), or kept
//!   sharded over a smaller group (an int). In backward the previous layer's all-gather is
//!   issued before the current layer's gradients (implicit backward prefetch).
//! * `foreach_reduce`: a unit's unsharded gradients (param dtype) are copied into a
//!   reduce-scatter input of `ranks x padded shard` elements in `reduce_dtype`; the output
//!   (padded shard, `reduce_dtype`) becomes the sharded gradient in the parameter's dtype.
//! * torchao float8 with `enable_fsdp_float8_all_gather` (`float8/fsdp_utils.py`
//!   `WeightWithDynamicFloat8CastTensor`): `fsdp_pre_all_gather` casts a float8 linear's
//!   weight shard to float8, so it is gathered and held unsharded (`fsdp_post_all_gather`
//!   wraps the gathered bytes) in 1 byte per element; its gradient keeps `param_dtype`.

use super::{GatherMoments, States, shard};
use crate::config::{FsdpOptions, ReshardAfterForward};
use crate::error::Errors;
use crate::model::FfnKind;
use crate::placement::{Dim0, RankParams};
use crate::precision::StateBytes;
use crate::problem::{Layout, Resolved};
use crate::term::{Num, Term};

const SHARD_SOURCE: &str = "torch fully_shard (_fsdp_param.py _init_sharded_param): each parameter sharded on dim 0, ceil(dim0 / shard ranks) rows per rank, padded";

/// Elements per rank of a GPU's tensors sharded on dim 0 over `ranks` (routed experts over
/// `expert_ranks`) with the padding of `torch.chunk`, each as `[sharded, unsharded]`, the
/// unsharded being the padded tensors an all-gather rebuilds (`ranks x` the shard): of
/// every unit of the GPU, of the root unit (embeddings, final norm, LM head), of one
/// decoder layer of each kind (dense, MoE); and, unsharded, of the float8 linear weights
/// ([`Dim0::float8`]) of every unit and of one layer of each kind. One pass over the
/// tensors.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Padding {
    all: [u64; 2],
    root: [u64; 2],
    layer: [[u64; 2]; 2],
    all8: u64,
    layer8: [u64; 2],
}

impl Padding {
    fn of(p: &RankParams, ranks: u64, expert_ranks: u64) -> Padding {
        let mut s = Padding::default();
        for t in &p.tensors {
            let ranks = if t.expert { expert_ranks } else { ranks };
            let shard = t.rows.div_ceil(ranks) * t.row_elems;
            // one unit's (a layer's, or the root's) and every unit's
            let one = [t.count * shard, t.count * shard * ranks];
            let every = one.map(|x| t.times * x);
            for (a, e) in s.all.iter_mut().zip(every) {
                *a += e;
            }
            match t.layer {
                Some(k) => {
                    let l = &mut s.layer[usize::from(k == FfnKind::Moe)];
                    for (a, o) in l.iter_mut().zip(one) {
                        *a += o;
                    }
                    if t.float8 {
                        s.layer8[usize::from(k == FfnKind::Moe)] += one[1];
                    }
                }
                None => {
                    for (a, e) in s.root.iter_mut().zip(every) {
                        *a += e;
                    }
                }
            }
            if t.float8 {
                s.all8 += every[1];
            }
        }
        s
    }
}

impl FsdpOptions {
    /// Ranks one FSDP2 shard group spans: the data-parallel (and context-parallel) ranks of
    /// one replica (HSDP: `data_parallel_replicate_size` replicas).
    pub(super) fn group2(&self, l: &Layout) -> u64 {
        (l.shard_group() / l.data_parallel_replicate_size).max(1)
    }

    /// Ranks the routed experts are sharded over: transformers' expert-data-parallel mesh
    /// (`efsdp` = shard ranks / expert parallel size).
    fn expert_group2(&self, l: &Layout) -> u64 {
        (self.group2(l) / l.expert_parallel_size).max(1)
    }

    /// `reshard_after_forward` as torch applies it: the config's, else `false` under
    /// pipeline parallelism (torchtitan `fsdp_reshard_after_forward: default`), else true;
    /// an int equal to the shard group is `true`, 1 is `false`.
    pub(super) fn raf(&self, l: &Layout) -> ReshardAfterForward {
        let g = self.group2(l);
        match self.reshard_after_forward {
            None if l.pipeline_parallel_size > 1 => ReshardAfterForward::Always(false),
            None => ReshardAfterForward::Always(true),
            Some(ReshardAfterForward::Group(1)) => ReshardAfterForward::Always(false),
            Some(ReshardAfterForward::Group(k)) if k >= g => ReshardAfterForward::Always(true),
            Some(x) => x,
        }
    }

    /// Elements unsharded at once in backward: the root, the layer running and the one
    /// prefetched; without resharding after forward every layer.
    pub(super) fn unsharded2<N: Num>(&self, p: &RankParams) -> N {
        let n = N::n;
        n(p.root, "params of the root unit")
            + n(2, "units") * n(p.largest_layer, "params of the largest layer")
    }

    /// The unsharded memory at each moment of a step (padded as all-gathers rebuild them,
    /// `param` / `reduce` bytes per element of param_dtype / reduce_dtype):
    /// * forward, first layer: the root unsharded, its all-gather buffer (kept until the next
    ///   all-gather: `_fsdp_param_group.py` AllGatherState) and the first layer's buffer;
    /// * end of forward: the root, the layers kept after forward, the last all-gather buffer;
    /// * start of backward: the root (all-gathered again, with its buffer, when it was
    ///   resharded after forward: an explicit `reshard_after_forward` applies to the root
    ///   too, `_fully_shard.py auto_reshard_after_forward`) and the layers kept;
    /// * a layer's backward: the root and its output layer's unsharded gradient, the layer
    ///   unsharded, the next layer's all-gather buffer (prefetch), the previous layer's
    ///   reduce-scatter input (`reduce_dtype`, kept until the next reduce-scatter) and the
    ///   layers still kept (the layer's own gradients are its backward transient);
    /// * end of backward: the root's unsharded gradients and its reduce-scatter input.
    ///
    /// With `float8_all_gather` the float8 linear weights ([`Dim0::float8`]) are gathered,
    /// held unsharded and kept after forward in 1 byte per element (torchao
    /// `fsdp_post_all_gather` wraps the gathered float8 data itself); their gradients, and
    /// everything else, keep `param_dtype`.
    fn moments<N: Num>(
        &self,
        r: &Resolved,
        p: &RankParams,
        pad: &Padding,
        param: u64,
        reduce: u64,
    ) -> GatherMoments<N> {
        let (n, bytes) = (N::n, N::bytes);
        let l = &r.layout;
        // the float8 weights' share counts only when they are gathered in float8
        let f8_on = self.float8_all_gather;
        let root = pad.root[1];
        // the decoder layer of the kind with the most unsharded elements (gradients) and
        // of the kind with the most unsharded bytes, as (elements, of them float8)
        let kinds = [0, 1].map(|k| (pad.layer[k][1], if f8_on { pad.layer8[k] } else { 0 }));
        let layer = kinds.iter().map(|k| k.0).max().unwrap_or(0);
        let (layer_all, layer8) = kinds
            .iter()
            .copied()
            .max_by_key(|&(all, f8)| (all - f8) * param + f8)
            .unwrap_or((0, 0));
        let layers = pad.all[1] - root;
        // every float8 weight is a decoder layer's (Dim0::float8): the root holds none
        let layers8 = if f8_on { pad.all8 } else { 0 };
        let raf = self.raf(l);
        let keep = |x: u64| match raf {
            ReshardAfterForward::Always(true) => 0,
            ReshardAfterForward::Always(false) => x,
            ReshardAfterForward::Group(k) => x.div_ceil(k),
        };
        let kept = keep(layers);
        // held in `param_dtype` / in float8
        let (kept_p, kept8) = (keep(layers - layers8), keep(layers8));
        let layer_p = layer_all - layer8;
        // the root unit stays unsharded from forward into backward unless it was given an
        // int (measured: with `True` passed explicitly torch keeps the root's parameters
        // for backward; with an int it keeps a shard over that many ranks and all-gathers
        // the root again when backward starts)
        let root_post_forward = match raf {
            ReshardAfterForward::Group(k) => Some(k),
            _ => None,
        };
        let pb = || bytes(param);
        let root_n = || n(root, "root unit params padded");
        let layer_n = |label: &'static str| n(layer_p, label);
        let kept_n = || n(kept_p, "layer params kept after forward");
        // the float8 weights' share (zero, and left out of the formula, without)
        let f8 = |elems: u64, label: &'static str| bytes(1) * n(elems, label);
        let layer8_n = || f8(layer8, "float8 linear weights of the layer padded");
        let kept8_n = || f8(kept8, "float8 linear weights kept after forward");
        let (head_rows, head_cols) = (
            r.arch.vocab_size.div_ceil(l.tensor_parallel_size),
            r.arch.hidden_size,
        );
        // the output layer is on this stage (an untied head, or the embedding serving as
        // one); a first pipeline stage's embedding has the same shape but no such gradient
        // at the loss
        let head = if p.root > 0 && (p.root_linear > 0 || p.tied_head > 0) {
            head_rows * head_cols
        } else {
            0
        };
        let src = "torch fully_shard (_fsdp_param_group.py, _fsdp_collectives.py): unsharded parameters and all-gather buffers in param_dtype, reduce-scatter inputs in reduce_dtype, all padded to the shard group";
        // gradients accumulated unsharded over micro-batches (pipeline parallelism)
        let accumulated = if self.no_sync(r) {
            Term::new(
                bytes(reduce)
                    * n(
                        p.total(),
                        "unsharded gradients accumulated over micro-batches",
                    ),
                "torch.distributed.pipelining stage.py backward_maybe_with_nosync: set_requires_gradient_sync(False); FSDP2 accumulates the unsharded gradients in reduce_dtype (_fsdp_param.py unsharded_accumulated_grad)",
            )
        } else {
            Term::zero()
        };
        let forward_start = Term::new(
            pb() * (root_n() + root_n() + layer_n("params of the first layer padded")) + layer8_n(),
            src,
        );
        let forward_end = Term::new(
            pb() * (root_n() + kept_n() + layer_n("params of the last all-gather padded"))
                + kept8_n()
                + layer8_n(),
            src,
        );
        // backward starts in the root's pre-backward: unshard (all-gather again if it was
        // resharded to a smaller group), then prefetch the last layer (its all-gather buffer
        // replaces the root's), then the loss is differentiated
        let backward_start = Term::new(
            pb() * (root_n()
                + kept_n()
                + layer_n("params of the prefetched layer's all-gather padded"))
                + kept8_n()
                + layer8_n(),
            src,
        );
        let regather = root_post_forward.map(|k| {
            Term::new(
                pb() * (root_n()
                    + root_n()
                    + n(root.div_ceil(k), "root params kept sharded after forward")
                    + kept_n())
                    + kept8_n(),
                src,
            )
        });
        // without resharding after forward every layer is still unsharded (kept): nothing
        // is all-gathered or prefetched in backward
        let (running, prefetched, running8) = if kept >= layers {
            (0, 0, 0)
        } else {
            (layer_p, layer_p, layer8)
        };
        // without gradient sync (pipeline micro-batches but the last) nothing is
        // reduce-scattered: the gradients accumulate unsharded (`accumulated`)
        let scattered = if self.no_sync(r) { 0 } else { layer };
        let layer_backward = Term::new(
            pb() * (root_n()
                + n(head, "output layer gradient")
                + n(running, "params of the layer padded")
                + n(prefetched, "params of the prefetched layer padded")
                + kept_n())
                + f8(running8, "float8 linear weights of the layer padded")
                + f8(
                    running8,
                    "float8 linear weights of the prefetched layer padded",
                )
                + kept8_n()
                + bytes(reduce)
                    * n(
                        scattered,
                        "reduce-scatter input of the previous layer padded",
                    ),
            src,
        );
        // the root reduce-scatters last: its unsharded gradients and reduce-scatter input
        // exist while its own sharded gradient does not yet (counted in `gradients`)
        let root_shard = if r.config.training.gradient_accumulation_steps == 1 {
            pad.root[0]
        } else {
            0 // an earlier micro-batch's sharded gradient exists already
        };
        let backward_end = if self.no_sync(r) {
            // torch.distributed.pipelining (stage.py backward_maybe_with_nosync): every
            // micro-batch runs with set_reshard_after_backward(False) and without gradient
            // sync; after the last one the stage's gradients are reduce-scattered unit by
            // unit (finalize_backward): every parameter and accumulated gradient still
            // unsharded, plus one unit's reduce-scatter input (the sharded gradients are
            // created as the unsharded ones are freed)
            Term::new(
                pb() * (root_n() + kept_n())
                    + kept8_n()
                    + bytes(reduce)
                        * n(
                            root.max(layer),
                            "reduce-scatter input of the largest unit padded",
                        ),
                src,
            )
        } else {
            Term::new(
                (pb() * root_n() + bytes(reduce) * n(root, "root reduce-scatter input padded"))
                    .minus(
                        bytes(r.bytes.grad)
                            * n(root_shard, "root sharded gradient not yet reduced"),
                    ),
                src,
            )
        };
        GatherMoments {
            forward_start,
            forward_end,
            backward_start,
            regather,
            layer_backward,
            backward_end,
            accumulated,
        }
    }

    /// Gradients accumulate unsharded over micro-batches: the pipeline schedule runs every
    /// micro-batch but the last without gradient sync (torch.distributed.pipelining
    /// `backward_maybe_with_nosync` -> `set_requires_gradient_sync(False)`), and FSDP2 keeps
    /// the unsharded gradients, in `reduce_dtype` (`FSDPParam.unsharded_grad_dtype`).
    fn no_sync(&self, r: &Resolved) -> bool {
        r.layout.pipeline_parallel_size > 1 && r.config.training.gradient_accumulation_steps > 1
    }

    pub(super) fn validate2(&self, _: super::Sizes, layout: Option<&Layout>, e: &mut Errors) {
        for (key, set) in [
            ("engine.sharding_strategy", self.sharding_strategy.is_some()),
            (
                "engine.hybrid_shard_group_size",
                self.hybrid_shard_group_size.is_some(),
            ),
        ] {
            if set {
                e.add(
                    key,
                    "set",
                    "is an FSDP1 option (fsdp_version 1); FSDP2 uses reshard_after_forward and parallelism.data_parallel_replicate_size",
                );
            }
        }
        if let (Some(ReshardAfterForward::Group(k)), Some(l)) = (self.reshard_after_forward, layout)
        {
            let g = self.group2(l);
            if k == 0 || !g.is_multiple_of(k) {
                e.add(
                    "engine.reshard_after_forward",
                    k,
                    format!("an int must divide the shard group ({g} ranks)"),
                );
            }
        }
    }

    pub(super) fn states2<N: Num>(&self, r: &Resolved, p: &RankParams, b: StateBytes) -> States<N> {
        let (n, bytes) = (N::n, N::bytes);
        let l = &r.layout;
        let precision = r.config.training.precision;
        let (g, eg) = (self.group2(l), self.expert_group2(l));
        let param = self.param_bytes(precision, b.weight);
        let reduce = self.reduce_bytes(precision, b.weight);
        let pad = Padding::of(p, g, eg);
        let sharded = pad.all[0];
        let sharded_n = || n(sharded, "params in padded shards");
        let (opt_dense, opt_expert): (N, N) = super::optimizer_states(r, p, b);
        let mut s = States::default();
        if self.cpu_offload {
            s.cpu = Term::new(
                n(l.gpus_on_node(), "GPUs on the node")
                    * (bytes(b.weight) + bytes(b.grad)).label("")
                    * sharded_n()
                    + shard(opt_dense + opt_expert, g, "GPUs in the shard group"),
                "torch fully_shard CPUOffloadPolicy: sharded parameters, gradients and optimizer states in CPU memory",
            );
        } else {
            s.weights = Term::new(bytes(b.weight) * sharded_n(), SHARD_SOURCE);
            s.gradients = Term::new(
                bytes(b.grad) * sharded_n(),
                "torch fully_shard foreach_reduce: sharded gradients in the parameter's dtype",
            );
            // torch.optim allocates each state like its (sharded, padded) parameter; other
            // layouts (factored, quantized) are shared out over the shard groups
            let optimizer = match r.config.training.optimizer.info().layout {
                crate::optimizer::StateLayout::Full(k) => {
                    n(u64::from(k), "states") * bytes(b.state) * sharded_n()
                }
                _ => {
                    opt_dense.div_ceil(n(g, "GPUs in the shard group"))
                        + opt_expert.div_ceil(n(eg, "GPUs in the expert shard group"))
                }
            };
            s.optimizer = Term::new(
                optimizer,
                crate::term::source!(N;
                    "optimizer states of the sharded parameters; {}",
                    super::optimizer_source(r)
                ),
            );
            s.step_temporaries = Term::new(
                super::torch_step_temporaries(r, p, b, sharded),
                super::TORCH_STEP_SOURCE,
            );
        }
        s.gather_moments = Some(Box::new(self.moments(r, p, &pad, param, reduce)));
        s.unsharded_accumulation = self.no_sync(r);
        // report text: a numeric estimate builds none
        if N::REPORT
            && let Some(w) = expert_padding_warning(r, p, eg, b)
        {
            s.warnings.push(w);
        }
        s
    }
}

/// The warning when fused expert tensors pad on dim 0: fewer local experts than ranks in
/// the expert shard group (or a count they do not divide), so each rank keeps a whole
/// expert row instead of its even share.
fn expert_padding_warning(r: &Resolved, p: &RankParams, eg: u64, b: StateBytes) -> Option<String> {
    let experts: Vec<&Dim0> = p.tensors.iter().filter(|t| t.expert).collect();
    let rows = experts.first()?.rows;
    let padded: u64 = experts
        .iter()
        .map(|t| t.times * t.count * t.rows.div_ceil(eg) * t.row_elems)
        .sum();
    let even: u64 = experts
        .iter()
        .map(|t| (t.times * t.count * t.rows * t.row_elems).div_ceil(eg))
        .sum();
    if padded * 10 < even * 11 {
        return None; // under 10 % padding
    }
    let states = b.weight
        + b.grad
        + match r.config.training.optimizer.info().layout {
            crate::optimizer::StateLayout::Full(k) => u64::from(k) * b.state,
            _ => 2 * b.state,
        };
    Some(format!(
        "FSDP2 shards each fused expert tensor ([{rows} experts, ...]) on dim 0 over {eg} GPUs: every GPU holds ceil({rows} / {eg}) = {} expert rows, {:.1}x its even share, about {} more parameters, gradients and optimizer states per GPU, and all-gather / reduce-scatter buffers as much larger. Split the experts whole with parallelism.expert_parallel_size, shard over fewer GPUs (parallelism.data_parallel_replicate_size), or shard the experts on dim 1 (torchtitan's shard_placement_fn).",
        rows.div_ceil(eg),
        padded as f64 / even.max(1) as f64,
        crate::units::fmt_gib((padded - even) * states)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(rows: u64, row_elems: u64, count: u64, expert: bool) -> Dim0 {
        Dim0 {
            rows,
            row_elems,
            count,
            times: 1,
            expert,
            layer: None,
            embedding: false,
            float8: false,
        }
    }

    #[test]
    fn shards_pad_dim0_to_the_first_chunk() {
        let p = RankParams {
            // 8 experts fused in one [8, 2 x 14336, 4096] tensor, on 64 ranks: one expert row
            // each (ceil(8 / 64) = 1), 8x the even share; a 4096-row weight: 64 rows each
            tensors: vec![t(8, 2 * 14336 * 4096, 1, true), t(4096, 4096, 1, false)],
            ..RankParams::default()
        };
        assert_eq!(
            Padding::of(&p, 64, 64).all,
            [
                2 * 14336 * 4096 + 64 * 4096,
                64 * 2 * 14336 * 4096 + 4096 * 4096
            ]
        );
        // 4097 rows on 64 ranks: 65 rows each (the last rank pads 63 rows)
        let q = RankParams {
            tensors: vec![t(4097, 10, 1, false)],
            ..RankParams::default()
        };
        assert_eq!(Padding::of(&q, 64, 64).all, [65 * 10, 64 * 65 * 10]);
    }
}
