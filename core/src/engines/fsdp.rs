//! PyTorch Fully Sharded Data Parallel: FSDP2 (`fully_shard`, [`super::fsdp2`]) and FSDP1
//! (`FullyShardedDataParallel`, [`super::fsdp1`]), one `fsdp` engine with `fsdp_version`.

use super::{DpTraffic, EngineModel, Parallelism, Sizes, States};
use crate::activations::ModelCode;
use crate::config::{Dtype, FsdpOptions, Precision};
use crate::error::Errors;
use crate::placement::RankParams;
use crate::precision::{Framework, StateBytes};
use crate::problem::{Layout, Resolved};
use crate::term::{Expr, Num, Value};

/// FSDP1's option keys (besides `fsdp_version`).
const FSDP1_KEYS: &[&str] = &[
    "fsdp_version",
    "sharding_strategy",
    "hybrid_shard_group_size",
    "param_dtype",
    "reduce_dtype",
    "cpu_offload",
];
/// FSDP2's option keys.
const FSDP2_KEYS: &[&str] = &[
    "fsdp_version",
    "reshard_after_forward",
    "param_dtype",
    "reduce_dtype",
    "cpu_offload",
    "float8_all_gather",
];

impl FsdpOptions {
    /// The dtype parameters are gathered and computed in: `param_dtype`, else bf16 / fp16
    /// under AMP and bf16 under torchao float8 (`fp8`), else the weights' own dtype
    /// (`MixedPrecisionPolicy` / `MixedPrecision`). Float8 training keeps fp32 weights and
    /// computes in bf16 (its activations are bf16, [`crate::precision`]); under FSDP that
    /// bf16 is the policy's `param_dtype` (torchtitan `config_manager.py`
    /// `mixed_precision_param = "bfloat16"`, applied by `parallelize_llama.py` `apply_fsdp`
    /// whether or not the float8 converter is on).
    pub(crate) fn param_bytes(&self, precision: Precision, weight_bytes: u64) -> u64 {
        match (self.param_dtype, precision) {
            (Some(d), _) => d.bytes(),
            (None, Precision::AmpBf16 | Precision::AmpFp16 | Precision::Fp8) => 2,
            (None, _) => weight_bytes,
        }
    }
    /// The dtype gradients are reduce-scattered in: `reduce_dtype`, else fp32 under AMP and
    /// float8 (torchtitan `mixed_precision_reduce = "float32"`), else the parameter dtype.
    pub(crate) fn reduce_bytes(&self, precision: Precision, weight_bytes: u64) -> u64 {
        match (self.reduce_dtype, precision) {
            (Some(d), _) => d.bytes(),
            (None, Precision::AmpBf16 | Precision::AmpFp16 | Precision::Fp8) => Dtype::Fp32.bytes(),
            (None, _) => self.param_bytes(precision, weight_bytes),
        }
    }
}

impl EngineModel for FsdpOptions {
    fn kind(&self) -> &'static str {
        "fsdp"
    }
    fn label(&self) -> &'static str {
        "PyTorch FSDP"
    }
    fn option_keys(&self) -> &'static [&'static str] {
        if self.fsdp_version == 1 {
            FSDP1_KEYS
        } else {
            FSDP2_KEYS
        }
    }
    fn precision(&self) -> (Framework, u8) {
        (Framework::Torch, 0)
    }
    fn model_code(&self) -> ModelCode {
        ModelCode::Transformers
    }
    fn parallelism(&self) -> Parallelism {
        // FSDP2: DTensor TP with sequence parallelism (torchtitan), torch.distributed.pipelining
        // (interleaved schedules, uneven stages), context parallel, expert parallel; FSDP1
        // the same dimensions without sequence parallelism
        Parallelism {
            sequence: self.fsdp_version != 1,
            replicate: self.fsdp_version != 1,
            expert_tensor: false,
            ..Parallelism::ALL
        }
    }
    fn validate(&self, sizes: Sizes, layout: Option<&Layout>, e: &mut Errors) {
        match self.fsdp_version {
            1 => {
                self.validate1(layout, e);
                if self.reshard_after_forward.is_some() {
                    e.add(
                        "engine.reshard_after_forward",
                        "set",
                        "is an FSDP2 option (fsdp_version 2); FSDP1 says it with sharding_strategy SHARD_GRAD_OP",
                    );
                }
            }
            2 => self.validate2(sizes, layout, e),
            v => e.add("engine.fsdp_version", v, "must be 1 or 2"),
        }
        // torchao casts the float8 linears' weight shards in FSDP2's pre-all-gather hook
        // (`fsdp_pre_all_gather`), which FSDP1 does not have; that the precision has float8
        // linears is checked with the training section (`resolve::check_engine`)
        if self.float8_all_gather && self.fsdp_version != 2 {
            e.add(
                "engine.float8_all_gather",
                "true",
                "is an FSDP2 option (fsdp_version 2): torchao's float8 all-gather extends fully_shard",
            );
        }
    }
    fn states(&self, r: &Resolved, p: &RankParams, b: StateBytes) -> States {
        self.states_of(r, p, b)
    }
    fn states_value(&self, r: &Resolved, p: &RankParams, b: StateBytes) -> States<Value> {
        self.states_of(r, p, b)
    }
    fn weight_shard(&self, l: &Layout) -> u64 {
        if self.fsdp_version == 1 {
            self.group1(l)
        } else {
            self.group2(l)
        }
    }
    fn gathered_elements(&self, p: &RankParams) -> Expr {
        self.unsharded(p)
    }
    fn gathered_elements_value(&self, p: &RankParams) -> Value {
        self.unsharded(p)
    }
    fn compute_bytes(&self, precision: Precision, weight_bytes: u64) -> Option<u64> {
        self.param_dtype
            .map(|_| self.param_bytes(precision, weight_bytes))
    }
    fn autocast(&self) -> bool {
        false
    }
    fn torch_optimizer(&self) -> bool {
        true
    }
    fn supports_lora(&self) -> bool {
        true
    }
    fn traffic(&self, l: &Layout, precision: Precision, b: StateBytes) -> DpTraffic {
        // FSDP all-gathers each unit's parameters (param_dtype) before its forward and,
        // resharded after forward, again before its backward, and reduce-scatters its
        // gradients (reduce_dtype) in every backward, prefetching on its own streams
        // (_fsdp_collectives.py, _runtime_utils.py); HSDP all-reduces the reduced shards
        // across the replicas
        use crate::config::{ReshardAfterForward, ShardingStrategy};
        // under a pipeline schedule every micro-batch but the last runs without gradient
        // sync and without resharding after backward (torch.distributed.pipelining stage.py
        // `backward_maybe_with_nosync`): one reduce-scatter per step, and parameters kept
        // unsharded (reshard_after_forward false, torchtitan's default with PP) are gathered
        // once per step
        let pipelined = self.fsdp_version == 2 && l.pipeline_parallel_size > 1;
        let (group, replicas, gathers, shard) = if self.fsdp_version == 1 {
            let g = self.group1(l);
            match self.strategy() {
                ShardingStrategy::FullShard => (g, 1, 2, true),
                ShardingStrategy::ShardGradOp => (g, 1, 1, true),
                ShardingStrategy::NoShard => (l.shard_group(), 1, 0, false),
                ShardingStrategy::HybridShard => (g, (l.shard_group() / g).max(1), 2, true),
            }
        } else {
            let gathers = match self.raf(l) {
                ReshardAfterForward::Always(false) => 1,
                _ => 2,
            };
            (
                self.group2(l),
                l.data_parallel_replicate_size,
                gathers,
                true,
            )
        };
        DpTraffic {
            group,
            replicas,
            grad_reduce: if shard {
                super::GradReduce::ReduceScatter
            } else {
                super::GradReduce::AllReduce
            },
            reduce_every_micro_batch: !pipelined,
            gathers_per_micro_batch: if pipelined && gathers == 1 {
                0
            } else {
                gathers
            },
            gather_after_step: pipelined && gathers == 1,
            step_gather_overlapped: true,
            overlapped: true,
            grad_bytes: self.reduce_bytes(precision, b.weight),
            param_bytes: self.param_bytes(precision, b.weight),
            states_sharded: shard,
            host: if self.cpu_offload {
                super::HostTransfers::OptimizerAndParams
            } else {
                super::HostTransfers::None
            },
            edges: super::DpEdges::Units,
            gather_ops: super::Collectives::Units,
            reduce_ops: super::Collectives::Units,
            float8_gather: self.fsdp_version == 2 && self.float8_all_gather,
        }
    }
}

impl FsdpOptions {
    /// The model states of the FSDP version in use (see [`EngineModel::states`]).
    fn states_of<N: Num>(&self, r: &Resolved, p: &RankParams, b: StateBytes) -> States<N> {
        if self.fsdp_version == 1 {
            self.states1(r, p, b)
        } else {
            self.states2(r, p, b)
        }
    }
    /// Parameter elements unsharded at once (see [`EngineModel::gathered_elements`]).
    fn unsharded<N: Num>(&self, p: &RankParams) -> N {
        if self.fsdp_version == 1 {
            self.unsharded1(p)
        } else {
            self.unsharded2(p)
        }
    }
}
