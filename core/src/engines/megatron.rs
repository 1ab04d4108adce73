//! Megatron-LM / Megatron-Core: bf16 weights, fp32 `main_grad`, fp32 master weights and
//! optimizer states, replicated or (`--use-distributed-optimizer`) sharded over the
//! data-parallel group with context parallelism (`data_parallel_group_with_cp`).

use super::{DpTraffic, EngineModel, GradReduce, HostTransfers, Parallelism, Sizes, States, shard};
use crate::activations::ModelCode;
use crate::config::MegatronOptions;
use crate::error::Errors;
use crate::placement::RankParams;
use crate::precision::{Framework, StateBytes};
use crate::problem::{Layout, Resolved};
use crate::term::{Expr, Num, Term, Value};

impl EngineModel for MegatronOptions {
    fn kind(&self) -> &'static str {
        "megatron"
    }
    fn label(&self) -> &'static str {
        "Megatron-LM"
    }
    fn option_keys(&self) -> &'static [&'static str] {
        &[
            "distributed_optimizer",
            "scatter_gather_tensors_in_pipeline",
        ]
    }
    fn precision(&self) -> (Framework, u8) {
        (Framework::Megatron, 0)
    }
    fn model_code(&self) -> ModelCode {
        ModelCode::Megatron
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism {
            replicate: false,
            pipeline_partitioned: self.scatter_gather_tensors_in_pipeline,
            ..Parallelism::ALL
        }
    }
    fn validate(&self, _: Sizes, _: Option<&Layout>, _: &mut Errors) {}
    fn states(&self, r: &Resolved, p: &RankParams, b: StateBytes) -> States {
        self.states_of(r, p, b)
    }
    fn states_value(&self, r: &Resolved, p: &RankParams, b: StateBytes) -> States<Value> {
        self.states_of(r, p, b)
    }
    fn weight_shard(&self, _: &Layout) -> u64 {
        1
    }
    fn gathered_elements(&self, _: &RankParams) -> Expr {
        Expr::zero()
    }
    fn gathered_elements_value(&self, _: &RankParams) -> Value {
        Value::zero()
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
        // Megatron-Core `DistributedDataParallel`: `bucket_size = max(40000000,
        // 1000000 * data_parallel_size)` elements when `--ddp-bucket-size` is not given;
        // the parameter all-gather runs over the same buckets
        let buckets = super::Collectives::Buckets {
            elements: 40_000_000u64.max(1_000_000u64.saturating_mul(l.shard_group())),
        };
        // Megatron-Core DDP (distributed/distributed_data_parallel.py): the gradient buffer
        // (fp32 main_grad when accumulating in fp32) is reduced once per step, after the last
        // micro-batch (no_sync before it); the distributed optimizer reduce-scatters it and
        // all-gathers the updated bf16 parameters. Overlapped as the published recipes run it
        // (`--overlap-grad-reduce`, `--overlap-param-gather`).
        DpTraffic {
            group: l.shard_group(),
            replicas: 1,
            grad_reduce: if self.distributed_optimizer {
                GradReduce::ReduceScatter
            } else {
                GradReduce::AllReduce
            },
            reduce_every_micro_batch: false,
            gathers_per_micro_batch: 0,
            gather_after_step: self.distributed_optimizer,
            step_gather_overlapped: true,
            overlapped: true,
            grad_bytes: if b.grad_accum > 0 {
                b.grad_accum
            } else {
                b.grad
            },
            param_bytes: b.weight,
            states_sharded: self.distributed_optimizer,
            host: HostTransfers::None,
            edges: super::DpEdges::LastBucket,
            gather_ops: buckets,
            reduce_ops: buckets,
            float8_gather: false,
        }
    }
}

impl MegatronOptions {
    /// The engine's model states (see [`EngineModel::states`]).
    fn states_of<N: Num>(&self, r: &Resolved, p: &RankParams, b: StateBytes) -> States<N> {
        let (n, bytes) = (N::n, N::bytes);
        let l = &r.layout;
        // the distributed optimizer shards master weights and optimizer states over the
        // data-parallel group with context parallelism; routed experts over the
        // expert-data-parallel group (Megatron-Core distributed/param_and_grad_buffer.py)
        let (dense_shard, expert_shard) = if self.distributed_optimizer {
            (l.shard_group(), l.expert_shard_group())
        } else {
            (1, 1)
        };
        let (opt_dense, opt_expert): (N, N) = super::optimizer_states(r, p, b);
        let source = if self.distributed_optimizer {
            "Megatron-LM theoretical_memory_usage.py: 6 + 12/DP bytes per parameter with the distributed optimizer (DP counts the context-parallel ranks: data_parallel_group_with_cp)"
        } else {
            "Megatron-LM theoretical_memory_usage.py: 18 bytes per parameter"
        };
        let regime = super::regime_source::<N>(r);
        States {
            weights: Term::new(
                bytes(b.weight) * n(p.total(), "params")
                    + bytes(b.fp8_weight_cache) * n(p.linear, "linear weights cached in fp8"),
                regime.clone(),
            ),
            gradients: Term::new(bytes(b.grad) * n(p.total(), "params"), regime),
            master: Term::new(
                shard(
                    bytes(b.master) * n(p.dense, "dense params"),
                    dense_shard,
                    "data-parallel ranks",
                ) + shard(
                    bytes(b.master) * n(p.expert, "expert params"),
                    expert_shard,
                    "expert-data-parallel ranks",
                ),
                source,
            ),
            optimizer: Term::new(
                shard(opt_dense, dense_shard, "data-parallel ranks")
                    + shard(opt_expert, expert_shard, "expert-data-parallel ranks"),
                crate::term::source!(N; "{source}; {}", super::optimizer_source(r)),
            ),
            grads_persistent: true,
            ..States::default()
        }
    }
}
