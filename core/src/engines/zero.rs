//! DeepSpeed ZeRO (stages 0-3, CPU / NVMe offload), on Hugging Face models (`deepspeed`)
//! and under Megatron-DeepSpeed's model code (`megatron_deepspeed`): one set of options
//! ([`ZeroOptions`], `ds_config.json` names), one memory model.

use super::{DpTraffic, EngineModel, GradReduce, HostTransfers, Parallelism, Sizes, States, shard};
use crate::activations::ModelCode;
use crate::config::{MegatronDeepspeedOptions, Offload, ZeroOptions};
use crate::error::Errors;
use crate::limits;
use crate::placement::RankParams;
use crate::precision::{Framework, StateBytes};
use crate::problem::{Layout, Resolved};
use crate::term::{Expr, Num, Term, Value};

/// The options of both ZeRO engines (`ds_config.json` `zero_optimization` names).
const ZERO_KEYS: &[&str] = &[
    "zero_stage",
    "offload_optimizer",
    "offload_param",
    "reduce_bucket_size",
    "overlap_comm",
    "stage3_prefetch_bucket_size",
    "stage3_max_live_parameters",
    "stage3_param_persistence_threshold",
    "stage3_max_reuse_distance",
    "sub_group_size",
    "stage3_blocking_fetch",
];

/// The largest ZeRO stage.
pub const MAX_STAGE: u8 = 3;

const GATHER_SOURCE: &str = "DeepSpeed ZeRO-3 (partitioned_param_coordinator.py): modules reused within stage3_max_reuse_distance stay gathered from the end of forward into backward; else the module running plus the prefetch bucket (stage3_prefetch_bucket_size); at most stage3_max_live_parameters but never less than one whole module";

/// ZeRO-3's sub-groups as `_create_fp16_sub_groups` fills them
/// ([`ZeroOptions::packed_sub_group`]).
struct SubGroups {
    /// `sub_group_size`.
    size: u64,
    /// Elements of the sub-group being filled.
    open: u64,
    /// Elements of the largest closed one.
    largest: u64,
}

impl SubGroups {
    /// Adds a parameter's partition of `x` elements, closing the sub-group when it holds
    /// `size` or more.
    fn add(&mut self, x: u64) {
        self.open += x;
        if self.open >= self.size {
            self.largest = self.largest.max(self.open);
            self.open = 0;
        }
    }
}

impl ZeroOptions {
    /// DeepSpeed's data-parallel traffic (runtime/zero/stage_1_and_2.py, stage3.py): stage 0
    /// all-reduces the gradients at the accumulation boundary; stage 1 reduce-scatters
    /// them there, stage 2 in every backward (its gradients are partitioned), both
    /// all-gathering the updated parameters after the step; stage 3 all-gathers each
    /// module's parameters in forward and again in backward (under full recomputation a
    /// third time for the sub-modules `stage3_max_reuse_distance` lets go after their
    /// recomputed forward, [`super::Collectives::Modules`]) and reduce-scatters every
    /// backward. Gradients travel in the model dtype (`communication_data_type` default).
    /// Overlapped with compute when `overlap_comm` (default on at stage 3 only).
    fn zero_traffic(&self, l: &Layout, b: StateBytes) -> DpTraffic {
        let stage = self.zero_stage;
        DpTraffic {
            group: l.shard_group(),
            replicas: 1,
            grad_reduce: if stage == 0 {
                GradReduce::AllReduce
            } else {
                GradReduce::ReduceScatter
            },
            reduce_every_micro_batch: stage >= 2,
            gathers_per_micro_batch: if stage == 3 { 2 } else { 0 },
            gather_after_step: stage == 1 || stage == 2,
            // inside the optimizer step (stage_1_and_2.py `step`), never under compute
            step_gather_overlapped: false,
            overlapped: self.overlap_comm(),
            grad_bytes: b.grad,
            param_bytes: b.weight,
            states_sharded: stage >= 1,
            host: match (self.offload_optimizer, self.offload_param) {
                (_, Offload::Cpu | Offload::Nvme) => HostTransfers::OptimizerAndParams,
                (Offload::Cpu | Offload::Nvme, Offload::None) => HostTransfers::Optimizer,
                (Offload::None, Offload::None) => HostTransfers::None,
            },
            edges: if stage == 3 {
                super::DpEdges::FirstModules
            } else {
                super::DpEdges::LastBucket
            },
            gather_ops: if stage == 3 {
                super::Collectives::Modules {
                    persistence_threshold: self.stage3_param_persistence_threshold,
                    reuse_distance: self.stage3_max_reuse_distance,
                    blocking: self
                        .stage3_blocking_fetch
                        .then_some(self.stage3_prefetch_bucket_size),
                }
            } else {
                // ZeRO-1/2 `step`: `all_gather_dp_groups` takes its
                // `all_gather_into_tensor_dp_groups` branch wherever torch has
                // `all_gather_into_tensor` (NCCL, torch >= 1.13), one collective per optimizer
                // parameter group into the flat bit16 buffer, `allgather_bucket_size` unread
                // (`runtime/utils.py`); transformers' Trainer and Megatron build two groups,
                // with and without weight decay (`get_decay_parameter_names`, `_get_param_groups`)
                super::Collectives::ParamGroups(2)
            },
            reduce_ops: super::Collectives::Buckets {
                elements: self.reduce_bucket_size.max(1),
            },
            float8_gather: false,
        }
    }

    /// Checks shared by both ZeRO engines.
    fn validate_zero(&self, e: &mut Errors) {
        if self.zero_stage > MAX_STAGE {
            e.add("engine.zero_stage", self.zero_stage, "must be 0, 1, 2 or 3");
        }
        if self.offload_param != Offload::None && self.zero_stage != 3 {
            e.add(
                "engine.offload_param",
                format!("{:?}", self.offload_param).to_lowercase(),
                "parameter offload needs zero_stage 3",
            );
        }
        if self.offload_optimizer != Offload::None && self.zero_stage == 0 {
            e.add(
                "engine.offload_optimizer",
                format!("{:?}", self.offload_optimizer).to_lowercase(),
                "optimizer offload needs zero_stage 1, 2 or 3",
            );
        }
        // DeepSpeed's own bounds (runtime/zero/config.py: ge=0); a sub-group size of 0
        // makes every parameter a sub-group of its own
        e.range(
            "engine.sub_group_size",
            self.sub_group_size,
            0,
            limits::MAX_PARAMS,
        );
        for (f, v) in [
            ("engine.reduce_bucket_size", self.reduce_bucket_size),
            (
                "engine.stage3_prefetch_bucket_size",
                self.stage3_prefetch_bucket_size,
            ),
            (
                "engine.stage3_max_live_parameters",
                self.stage3_max_live_parameters,
            ),
            (
                "engine.stage3_max_reuse_distance",
                self.stage3_max_reuse_distance,
            ),
            (
                "engine.stage3_param_persistence_threshold",
                self.stage3_param_persistence_threshold,
            ),
        ] {
            e.range(f, v, 0, limits::MAX_PARAMS);
        }
    }

    /// Elements of the largest ZeRO-3 sub-group of one rank's partition. stage3.py
    /// `_create_fp16_sub_groups` walks the parameters in `model.parameters()` order (the
    /// embeddings, the decoder layers in order, the final norm and LM head), adding each
    /// one's partition (`partition_numel`, `ceil(numel / ranks)`) to the current sub-group
    /// and closing it once it holds `sub_group_size` elements or more, or at the last
    /// parameter: a sub-group exceeds `sub_group_size` by up to one parameter's partition,
    /// and `sub_group_size` 0 makes every parameter a sub-group of its own. The step's
    /// fp32 gradient copy (`_prepare_fp32_grad_for_sub_group`) and the NVMe swap buffers
    /// (`largest_numel`) are one sub-group's. Routed experts are one fused tensor per layer
    /// (transformers 5) partitioned over the expert shard group `edp`; everything else over
    /// `dp`. A layer that cannot close a sub-group is added whole. A layer's tensors are
    /// walked in the inventory's order (norms first; transformers registers Llama's norms
    /// after the MLP), which moves a sub-group's end by at most a norm's partition.
    ///
    /// `None` where the partition (`ceil(params / dp)`) is one sub-group: below stage 3, or
    /// not above `sub_group_size` (`_create_fp16_sub_groups` returns the whole group).
    fn packed_sub_group(&self, r: &Resolved, p: &RankParams) -> Option<u64> {
        let (dp, edp) = (r.layout.shard_group(), r.layout.expert_shard_group());
        if self.zero_stage < 3 || p.total().div_ceil(dp.max(1)) <= self.sub_group_size {
            return None;
        }
        use crate::model::FfnKind;
        use crate::placement::Dim0;
        let a = &r.arch;
        let size = self.sub_group_size;
        // one tensor's partition: `count` of them per unit
        let part =
            |t: &Dim0| (t.rows * t.row_elems).div_ceil(if t.expert { edp } else { dp }.max(1));
        let mut sub = SubGroups {
            size,
            open: 0,
            largest: 0,
        };
        // the tensors `which` selects, in order, each `count` times
        fn walk(
            sub: &mut SubGroups,
            tensors: &[Dim0],
            part: impl Fn(&Dim0) -> u64,
            which: impl Fn(&Dim0) -> bool,
        ) {
            for t in tensors.iter().filter(|t| which(t)) {
                let x = part(t);
                for _ in 0..t.count {
                    sub.add(x);
                }
            }
        }
        let mut totals = [0u64; 2];
        for t in &p.tensors {
            match t.layer {
                Some(FfnKind::Dense) => totals[0] += t.count * part(t),
                Some(FfnKind::Moe) => totals[1] += t.count * part(t),
                None => {}
            }
        }
        walk(&mut sub, &p.tensors, part, |t| t.embedding);
        let layers = a.num_hidden_layers;
        let mut i = 0;
        while i < layers {
            let kind = a.ffn_kind(i);
            let total = totals[usize::from(kind == FfnKind::Moe)];
            // whole layers (of this kind: every remaining one without MoE) that leave the
            // sub-group open are added at once
            let run = if a.moe.is_none() { layers - i } else { 1 };
            let fit = size
                .saturating_sub(sub.open + 1)
                .checked_div(total)
                .unwrap_or(run)
                .min(run);
            if fit > 0 {
                sub.open += fit * total;
                i += fit;
            } else {
                walk(&mut sub, &p.tensors, part, |t| t.layer == Some(kind));
                i += 1;
            }
        }
        walk(&mut sub, &p.tensors, part, |t| {
            t.layer.is_none() && !t.embedding
        });
        // the last parameter closes the last sub-group
        Some(sub.largest.max(sub.open))
    }

    /// Parameter elements ZeRO-3 holds gathered at once. From the second step on, the
    /// coordinator follows the recorded module trace (`partitioned_param_coordinator.py`):
    /// a released module's parameters stay gathered when their next use is less than
    /// `stage3_max_reuse_distance` elements of fetches away, so at the turn from forward
    /// to backward the last modules of forward, up to that many elements, stay; at any
    /// other time the module running plus the prefetch bucket (`stage3_prefetch_bucket_size`).
    /// Everything is bounded by `stage3_max_live_parameters` but never below one whole
    /// module, and never more than the GPU's parameters. Only the bounds that bind are
    /// written.
    fn live_elements<N: Num>(&self, p: &RankParams) -> N {
        let n = N::n;
        let largest = || n(p.largest_module, "params of the largest module");
        let ahead = largest() + n(self.stage3_prefetch_bucket_size, "prefetched");
        let reuse = self.stage3_max_reuse_distance;
        let mut live = if reuse > ahead.to_u64() {
            n(reuse, "max reuse distance")
        } else {
            ahead
        };
        if live.to_u64() > self.stage3_max_live_parameters {
            live = N::min([live, n(self.stage3_max_live_parameters, "max live params")]);
        }
        if live.to_u64() < p.largest_module {
            live = N::max([live, largest()]);
        }
        if live.to_u64() > p.total() {
            live = N::min([live, n(p.total(), "params")]);
        }
        live
    }

    fn zero_states<N: Num>(&self, r: &Resolved, p: &RankParams, b: StateBytes) -> States<N> {
        let (n, bytes) = (N::n, N::bytes);
        let l = &r.layout;
        let stage = self.zero_stage;
        let params = p.total();
        let (dp, edp) = (l.shard_group(), l.expert_shard_group());
        let off_opt = self.offload_optimizer != Offload::None;
        let off_param = self.offload_param != Offload::None && stage == 3;
        let shard_os = stage >= 1;
        let sharded = |dense: N, expert: N| sharded(shard_os, dense, expert, dp, edp);
        let zero = crate::term::source!(N; "DeepSpeed ZeRO stage {stage}");
        let regime = super::regime_source::<N>(r);
        let mut s = States::default();
        // master weights, optimizer states and the fp32 gradient partition built for the step
        if !off_opt {
            s.master = Term::new(
                sharded(
                    bytes(b.master) * n(p.dense, "dense params"),
                    bytes(b.master) * n(p.expert, "expert params"),
                ),
                crate::term::source!(N;
                    "{zero} (ZeRO paper Sec. 3.1): fp32 master weights, sharded from stage 1"
                ),
            );
            let (opt_dense, opt_expert): (N, N) = super::optimizer_states(r, p, b);
            s.optimizer = Term::new(
                sharded(opt_dense, opt_expert),
                crate::term::source!(N;
                    "{zero}: optimizer states sharded from stage 1; {}",
                    super::optimizer_source(r)
                ),
            );
            // The step flattens the gradient partition (`cat`, in the gradient dtype) and
            // upcasts it to fp32 before the fused optimizer runs: the whole partition in
            // stage_1_and_2.py (`step`: flatten_dense_tensors_aligned, then
            // `single_grad_partition`), one sub-group at a time in stage3.py
            // (`_prepare_fp32_grad_for_sub_group`: cat, then `.to(fp32)`; sub-groups of
            // `sub_group_size` elements).
            let partition = if shard_os {
                shard(n(params, "params"), dp, "data-parallel ranks")
            } else {
                n(params, "params")
            };
            let upcast = match self.packed_sub_group(r, p) {
                Some(e) => n(e, "elements of the largest sub-group"),
                None => partition,
            };
            let flat = if stage >= 1 {
                bytes(b.grad) * upcast.clone()
            } else {
                N::zero()
            };
            let fp32_grads = if b.master > 0 {
                bytes(4) * upcast.clone()
            } else {
                N::zero()
            };
            let info = r.config.training.optimizer.info();
            let temps = if info.fused_kernel {
                N::zero()
            } else {
                n(info.foreach_temporaries as u64, "temporaries") * bytes(b.state) * upcast
            };
            s.step_temporaries = Term::new(
                flat + fp32_grads + temps,
                "DeepSpeed stage_1_and_2.py step (flattened gradient partition, single_grad_partition in fp32) / stage3.py _prepare_fp32_grad_for_sub_group (cat and fp32 copy of one sub-group); DeepSpeed's fused Adam/LAMB allocate no temporaries",
            );
        }
        let ga = r.config.training.gradient_accumulation_steps;
        let partition_grads = || {
            shard(
                bytes(b.grad) * n(params, "params"),
                dp,
                "data-parallel ranks",
            )
        };
        match stage {
            0 => {
                s.gradients = Term::new(
                    super::grad_bytes::<N>(b) * n(params, "params"),
                    regime.clone(),
                );
                s.grads_persistent = b.grad_accum > 0;
            }
            1 => {
                // stage_1_and_2.py with partition_gradients=False: every parameter's
                // gradient is kept whole until the end of backward (accumulated there over
                // micro-batches), then the epilogue keeps this rank's partition
                // (`averaged_gradients`) for the step
                s.gradients = Term::new(
                    bytes(b.grad) * n(params, "params"),
                    crate::term::source!(N;
                        "{zero}: whole gradients until the end of backward (partition_gradients=False)"
                    ),
                );
                s.step_gradients = Some(Term::new(
                    partition_grads(),
                    crate::term::source!(N;
                        "{zero}: this rank's gradient partition (averaged_gradients) at the step"
                    ),
                ));
                s.end_of_backward = Term::new(
                    partition_grads(),
                    crate::term::source!(N;
                        "{zero}: reduce_gradients at the end of backward allocates this rank's gradient partition while the whole gradients still exist"
                    ),
                );
                s.grads_persistent = ga > 1;
            }
            2 if !off_opt => {
                // copy_grads_in_partition: `grads_in_partition`, this rank's partition, from
                // the first reduced bucket to the step (and over micro-batches)
                s.gradients = Term::new(
                    partition_grads(),
                    crate::term::source!(N;
                        "{zero}: gradients sharded from stage 2 (grads_in_partition)"
                    ),
                );
                s.grads_persistent = ga > 1;
            }
            3 if !off_opt => {
                // stage3.py: grad_partitions_flat_buffer, zeros at initialization and kept
                s.gradients = Term::new(
                    partition_grads(),
                    crate::term::source!(N;
                        "{zero}: grad_partitions_flat_buffer (this rank's gradient partitions), allocated at initialization"
                    ),
                );
                s.grads_persistent = true;
            }
            _ => s.grads_persistent = true,
        }
        // the independent-partition gradient (ipg) bucket, reduce_bucket_size elements,
        // allocated whole whatever the model's size (contiguous_gradients, default true)
        if stage >= 1 {
            let ipg = n(self.reduce_bucket_size, "reduce_bucket_size") * bytes(b.grad);
            if stage == 3 {
                // stage3.py: one IPGBucketZ3 buffer per communication dtype, allocated when
                // the optimizer is built and kept
                s.comm = Term::new(
                    ipg.clone(),
                    "DeepSpeed stage3.py: the ipg bucket buffer (reduce_bucket_size elements, default 5e8), allocated at initialization",
                );
                // __avg_scatter_grads -> reduce_scatter_coalesced flattens a full bucket's
                // gradients (`cat`) for the reduce-scatter. A parameter larger than the
                // bucket is reduced alone (reduce_independent_p_g_buckets_and_remove_grads
                // reduces the bucket before adding it; a reduce_bucket_size of 0, as in
                // transformers' tests, makes every parameter one): flattened only when its
                // elements do not divide over the ranks, padded to them (coalesced_collectives.py:
                // "if there's only one tensor being reduced and we don't need to pad")
                let lone = p
                    .tensors
                    .iter()
                    .filter_map(|t| {
                        let elems = t.rows * t.row_elems;
                        let ranks = if t.expert { edp } else { dp }.max(1);
                        (elems > self.reduce_bucket_size && elems % ranks != 0)
                            .then(|| elems.div_ceil(ranks) * ranks)
                    })
                    .max()
                    .unwrap_or(0);
                let flat = if lone > self.reduce_bucket_size.min(params) {
                    n(lone, "elements of a parameter over the bucket, padded") * bytes(b.grad)
                } else if self.reduce_bucket_size > params {
                    n(params, "params") * bytes(b.grad)
                } else {
                    ipg
                };
                s.backward_buffers = Term::new(
                    flat,
                    "DeepSpeed stage3.py __avg_scatter_grads / coalesced_collectives.py reduce_scatter_coalesced: a bucket's gradients flattened for the reduce-scatter, during backward (a parameter over reduce_bucket_size is a bucket of its own, flattened only when padded to the ranks)",
                );
            } else {
                // stage_1_and_2.py setup_buckets: allocated when backward starts, a second
                // buffer with overlap_comm, released by the step
                s.backward_buffers = Term::new(
                    if self.overlap_comm() {
                        ipg * n(2, "buffers with overlap_comm")
                    } else {
                        ipg
                    },
                    "DeepSpeed stage_1_and_2.py setup_buckets: ipg bucket buffers (reduce_bucket_size elements, default 5e8; two with overlap_comm) during backward",
                );
            }
        }
        // weights
        if stage == 3 {
            let persistent = p.small;
            let partitioned = if off_param {
                N::zero()
            } else {
                shard(
                    bytes(b.weight)
                        * (n(params, "params") - n(persistent, "persistent params")).label(""),
                    dp,
                    "data-parallel ranks",
                )
            };
            s.weights = Term::new(
                partitioned
                    + bytes(b.weight)
                        * n(
                            persistent,
                            "params in tensors under stage3_param_persistence_threshold",
                        ),
                crate::term::source!(N;
                    "{zero}: parameters partitioned over the data-parallel ranks, tensors under stage3_param_persistence_threshold kept whole"
                ),
            );
            s.gathered = Term::new(bytes(b.weight) * self.live_elements(p), GATHER_SOURCE);
            if p.expert > 0
                && !r
                    .config
                    .training
                    .activation_checkpointing
                    .checkpoints_layers()
            {
                // transformers' fused expert tensors are used by grouped_mm, whose autograd
                // node saves the gathered weight itself; DeepSpeed's zero3_linear_wrap
                // (saving the parameter, re-gathered in backward) covers nn.Linear only, so
                // releasing the module cannot free them: every MoE layer's experts stay
                // gathered from its forward to its backward (under full recomputation the
                // checkpointed forward saves nothing)
                if N::REPORT {
                    s.warnings.push(format!(
                    "DeepSpeed ZeRO-3 keeps every MoE layer's gathered experts from its forward to its backward ({} per GPU): transformers' fused expert tensors are saved by grouped_mm's autograd node, which releasing the module cannot free. Recompute activations (training.activation_checkpointing: full) or use FSDP2.",
                    crate::units::fmt_gib(b.weight * p.expert)
                    ));
                }
                s.gathered = s.gathered
                    + Term::new(
                        bytes(b.weight) * n(p.expert, "routed-expert params"),
                        "DeepSpeed ZeRO-3 with transformers' fused experts: the gathered expert weights saved by grouped_mm's autograd node stay alive until the layer's backward (zero3_linear_wrap covers nn.Linear only; measured: Mixtral-8x7B on 64 GPUs keeps 89.3 GB)",
                    );
            }
        } else {
            s.weights = Term::new(bytes(b.weight) * n(params, "params"), regime);
        }
        (s.cpu, s.nvme) = self.offload(r, p);
        s
    }

    /// CPU and NVMe memory per node for offloaded states.
    ///
    /// * CPU offload: DeepSpeed's documented CPU memory per node for offloaded model states
    ///   (deepspeed/runtime/zero: `estimate_zero2_model_states_mem_needs`,
    ///   `estimate_zero3_model_states_mem_needs` with `zero_init=True`,
    ///   `additional_buffer_factor` 1.5).
    /// * NVMe offload (ZeRO-Infinity): the same states (without the 1.5 factor) on NVMe; CPU
    ///   RAM holds the swap buffers: for optimizer states `buffer_count` (4) buffers of one
    ///   fp32 sub-group (`sub_group_size` elements, capped at the partition), for parameters
    ///   `buffer_count` (5) x `buffer_size` (1e8 elements) in half precision, per GPU.
    fn offload<N: Num>(&self, r: &Resolved, p: &RankParams) -> (Term<N>, Term<N>) {
        let (n, bytes) = (N::n, N::bytes);
        let l = &r.layout;
        let stage = self.zero_stage;
        let total = || n(r.params.total, "params");
        let nodes = || n(l.nodes(), "nodes");
        let opt = self.offload_optimizer != Offload::None;
        let param = self.offload_param != Offload::None && stage == 3;
        let nvme_opt = self.offload_optimizer == Offload::Nvme;
        let nvme_param = self.offload_param == Offload::Nvme && stage == 3;
        let buffer_factor = || (n(3, "").over(n(2, ""))).label("additional_buffer_factor");
        let cpu_source = "DeepSpeed estimate_zero2_model_states_mem_needs / estimate_zero3_model_states_mem_needs (zero_init=True, additional_buffer_factor 1.5): CPU memory per node";
        let nvme_source = "ZeRO-Infinity: states on NVMe; swap buffers in CPU memory (aio buffer_count 4 x sub_group_size fp32 for optimizer states, 5 x buffer_size 1e8 half-precision elements for parameters) per GPU";
        if !nvme_opt && !nvme_param {
            let states = match stage {
                3 if param => (bytes(18) * total()).over(nodes()),
                3 if opt => (bytes(16) * total()).over(nodes()),
                1 | 2 if opt => total() * N::max([bytes(4) * n(l.num_gpus, "GPUs"), bytes(16)]),
                _ => return (Term::zero(), Term::zero()),
            };
            return (
                Term::new((states * buffer_factor()).floor(), cpu_source),
                Term::zero(),
            );
        }
        let partition = p.total().div_ceil(l.shard_group());
        let opt_buffers = if nvme_opt {
            // one sub-group (`largest_numel`), or the whole partition when it is smaller
            let elements = match self.packed_sub_group(r, p) {
                Some(e) => n(e, "elements of the largest sub-group"),
                None => N::min([
                    n(partition, "partition params"),
                    n(self.sub_group_size, "sub_group_size"),
                ]),
            };
            n(4, "buffers") * bytes(4) * elements
        } else {
            N::zero()
        };
        let param_buffers = if nvme_param {
            n(5, "buffers") * n(100_000_000, "buffer_size") * bytes(2)
        } else {
            N::zero()
        };
        let cpu_states = if !nvme_opt && opt {
            (bytes(16) * total()).over(nodes()) * buffer_factor()
        } else {
            N::zero()
        };
        let cpu = cpu_states
            + n(l.gpus_on_node(), "GPUs on the node") * (opt_buffers + param_buffers).label("");
        let on_nvme = if nvme_opt {
            (bytes(16) * total()).over(nodes())
        } else {
            N::zero()
        } + if nvme_param {
            (bytes(2) * total()).over(nodes())
        } else {
            N::zero()
        };
        (
            Term::new(
                cpu.floor(),
                crate::term::source!(N; "{cpu_source}; {nvme_source}"),
            ),
            Term::new(on_nvme.floor(), nvme_source),
        )
    }
}

/// Dense and expert states, each sharded over its data-parallel group from ZeRO stage 1
/// (`shard_os`), else whole.
#[cfg_attr(not(target_arch = "wasm32"), inline(always))]
fn sharded<N: Num>(shard_os: bool, dense: N, expert: N, dp: u64, edp: u64) -> N {
    if shard_os {
        shard(dense, dp, "data-parallel ranks") + shard(expert, edp, "expert-data-parallel ranks")
    } else {
        dense + expert
    }
}

impl EngineModel for ZeroOptions {
    fn kind(&self) -> &'static str {
        "deepspeed"
    }
    fn label(&self) -> &'static str {
        "DeepSpeed ZeRO"
    }
    fn option_keys(&self) -> &'static [&'static str] {
        ZERO_KEYS
    }
    fn precision(&self) -> (Framework, u8) {
        (Framework::DeepSpeed, self.zero_stage)
    }
    fn model_code(&self) -> ModelCode {
        ModelCode::Transformers
    }
    fn parallelism(&self) -> Parallelism {
        // AutoTP, the pipeline engine (no interleaved schedule), Ulysses, DeepSpeed-MoE
        Parallelism {
            sequence: false,
            virtual_pipeline: false,
            replicate: false,
            expert_tensor: false,
            ulysses: true,
            ..Parallelism::ALL
        }
    }
    fn validate(&self, s: Sizes, _: Option<&Layout>, e: &mut Errors) {
        self.validate_zero(e);
        if self.zero_stage == 3 && s.tp > 1 {
            e.add(
                "parallelism.tensor_parallel_size",
                s.tp,
                "ZeRO-3 with tensor parallelism is not supported by plain DeepSpeed; use megatron_deepspeed or ZeRO 0-2 (AutoTP)",
            );
        }
        if s.pp > 1 && self.zero_stage > 1 {
            e.add(
                "engine.zero_stage",
                self.zero_stage,
                "DeepSpeed pipeline parallelism supports ZeRO stage 0 or 1 only",
            );
        }
    }
    fn states(&self, r: &Resolved, p: &RankParams, b: StateBytes) -> States {
        self.zero_states(r, p, b)
    }
    fn states_value(&self, r: &Resolved, p: &RankParams, b: StateBytes) -> States<Value> {
        self.zero_states(r, p, b)
    }
    fn zero_options(&self) -> Option<&ZeroOptions> {
        Some(self)
    }
    fn weight_shard(&self, l: &Layout) -> u64 {
        if self.zero_stage == 3 {
            l.shard_group()
        } else {
            1
        }
    }
    fn gathered_elements(&self, p: &RankParams) -> Expr {
        self.live_elements(p)
    }
    fn gathered_elements_value(&self, p: &RankParams) -> Value {
        self.live_elements(p)
    }
    fn persistence_threshold(&self) -> u64 {
        if self.zero_stage == 3 {
            self.stage3_param_persistence_threshold
        } else {
            0
        }
    }
    fn autocast(&self) -> bool {
        false
    }
    fn torch_optimizer(&self) -> bool {
        false
    }
    fn supports_lora(&self) -> bool {
        true
    }
    fn traffic(&self, l: &Layout, _: crate::config::Precision, b: StateBytes) -> DpTraffic {
        self.zero_traffic(l, b)
    }
}

impl EngineModel for MegatronDeepspeedOptions {
    fn kind(&self) -> &'static str {
        "megatron_deepspeed"
    }
    fn label(&self) -> &'static str {
        "Megatron-DeepSpeed"
    }
    fn option_keys(&self) -> &'static [&'static str] {
        ZERO_KEYS
    }
    fn precision(&self) -> (Framework, u8) {
        self.0.precision()
    }
    fn model_code(&self) -> ModelCode {
        ModelCode::Megatron
    }
    fn repeats_kv(&self) -> bool {
        // megatron/model/transformer.py ParallelAttention.forward: with num_key_value_heads
        // below num_attention_heads (`use_gqa`), `repeat_kv` expands the keys and values
        // to every query head (expand, then reshape: a copy) before the attention kernel
        // or DistributedAttention
        true
    }
    fn parallelism(&self) -> Parallelism {
        // Under --deepspeed, `megatron/training.py` hands `model[0]` alone to
        // `deepspeed.initialize` and a pipeline runs as DeepSpeed's PipelineEngine
        // (`GPTModelPipe`, `train_batch`): no interleaved schedule. Context parallelism is
        // DeepSpeed-Ulysses (`--ds-sequence-parallel-size`), which refuses Megatron's
        // sequence parallelism beside it (`megatron/initialize.py`). `GPTModelPipe` is a
        // `PipelineModule` with `partition_method='type:transformer'`: DeepSpeed splits the
        // layers itself (`megatron/model/gpt_model.py`), no first/last stage sizes.
        // DeepSpeed's PipelineEngine splits what a stage sends over the tensor-parallel
        // (slice) group and all-gathers it at the receiver (`runtime/pipe/engine.py`
        // `is_pipe_partitioned`, `is_grad_partitioned`, `PartitionedTensor`; the `pipeline`
        // config's `pipe_partitioned` and `grad_partitioned` default to true,
        // `runtime/config.py`).
        Parallelism {
            virtual_pipeline: false,
            uneven_pipeline: false,
            balanced_pipeline: true,
            replicate: false,
            expert_tensor: false,
            ulysses: true,
            sequence_with_context: false,
            pipeline_partitioned: true,
            ..Parallelism::ALL
        }
    }
    fn validate(&self, s: Sizes, _: Option<&Layout>, e: &mut Errors) {
        self.0.validate_zero(e);
        if s.pp > 1 && self.0.zero_stage > 1 {
            e.add(
                "engine.zero_stage",
                self.0.zero_stage,
                "Megatron-DeepSpeed supports ZeRO stage 0 or 1 with pipeline parallelism",
            );
        }
    }
    fn states(&self, r: &Resolved, p: &RankParams, b: StateBytes) -> States {
        self.0.zero_states(r, p, b)
    }
    fn states_value(&self, r: &Resolved, p: &RankParams, b: StateBytes) -> States<Value> {
        self.0.zero_states(r, p, b)
    }
    fn zero_options(&self) -> Option<&ZeroOptions> {
        Some(&self.0)
    }
    fn weight_shard(&self, l: &Layout) -> u64 {
        self.0.weight_shard(l)
    }
    fn gathered_elements(&self, p: &RankParams) -> Expr {
        self.0.live_elements(p)
    }
    fn gathered_elements_value(&self, p: &RankParams) -> Value {
        self.0.live_elements(p)
    }
    fn persistence_threshold(&self) -> u64 {
        self.0.persistence_threshold()
    }
    fn autocast(&self) -> bool {
        false
    }
    fn torch_optimizer(&self) -> bool {
        false
    }
    fn supports_lora(&self) -> bool {
        false
    }
    fn traffic(&self, l: &Layout, _: crate::config::Precision, b: StateBytes) -> DpTraffic {
        self.0.zero_traffic(l, b)
    }
}
