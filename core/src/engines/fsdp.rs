//! PyTorch Fully Sharded Data Parallel (FSDP1 `ShardingStrategy`): flat-parameter shards
//! in the loaded dtype, units all-gathered in `MixedPrecision.param_dtype`, the root unit
//! kept unsharded after forward and the next unit prefetched.

use super::{EngineModel, Parallelism, Sizes, States, shard};
use crate::activations::ModelCode;
use crate::config::{FsdpOptions, Precision, ShardingStrategy};
use crate::error::Errors;
use crate::placement::RankParams;
use crate::precision::{Framework, StateBytes};
use crate::problem::{Layout, Resolved};
use crate::term::{Expr, Term, bytes, n};

impl FsdpOptions {
    /// GPUs one shard group spans.
    fn group(&self, l: &Layout) -> u64 {
        match self.sharding_strategy {
            ShardingStrategy::FullShard | ShardingStrategy::ShardGradOp => l.shard_group(),
            ShardingStrategy::NoShard => 1,
            ShardingStrategy::HybridShard => self
                .hybrid_shard_group_size
                .unwrap_or(l.gpus_per_node)
                .min(l.shard_group())
                .max(1),
        }
    }
    /// Parameter elements unsharded at once: the root unit (embeddings, final norm, head),
    /// not resharded after forward, plus the current and the prefetched decoder-layer unit;
    /// with SHARD_GRAD_OP every unit from forward to backward.
    fn unsharded(&self, p: &RankParams) -> Expr {
        match self.sharding_strategy {
            ShardingStrategy::FullShard | ShardingStrategy::HybridShard => {
                n(p.root, "params of the root unit")
                    + n(2, "units") * n(p.largest_layer, "params of the largest layer")
            }
            ShardingStrategy::ShardGradOp => n(p.total(), "params"),
            ShardingStrategy::NoShard => Expr::zero(),
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
        &[
            "sharding_strategy",
            "hybrid_shard_group_size",
            "cpu_offload",
        ]
    }
    fn precision(&self) -> (Framework, u8) {
        (Framework::Torch, 0)
    }
    fn model_code(&self) -> ModelCode {
        ModelCode::Transformers
    }
    fn parallelism(&self) -> Parallelism {
        // DTensor TP, torch.distributed.pipelining (interleaved schedules, uneven stages),
        // context parallel, expert parallel; Megatron's sequence parallelism is not modelled
        Parallelism {
            sequence: false,
            ..Parallelism::ALL
        }
    }
    fn validate(&self, _: Sizes, layout: Option<&Layout>, e: &mut Errors) {
        if let Some(g) = self.hybrid_shard_group_size {
            if self.sharding_strategy != ShardingStrategy::HybridShard {
                e.add(
                    "engine.hybrid_shard_group_size",
                    g,
                    "only applies to sharding_strategy HYBRID_SHARD",
                );
            } else if let Some(l) = layout
                && (g == 0 || l.data_parallel_size % g != 0)
            {
                e.add(
                    "engine.hybrid_shard_group_size",
                    g,
                    format!("must divide data_parallel_size ({})", l.data_parallel_size),
                );
            }
        }
    }
    fn states(&self, r: &Resolved, p: &RankParams, b: StateBytes) -> States {
        let l = &r.layout;
        let group = self.group(l);
        let label = "GPUs in the shard group";
        // FSDP keeps the FlatParameter shard in the loaded dtype (fp32 under AMP) and
        // all-gathers units in MixedPrecision param_dtype (2 bytes under AMP / bf16).
        let compute = if r.config.training.precision == Precision::Fp32 {
            4
        } else {
            2
        };
        let params = || n(p.total(), "params");
        let (opt_dense, opt_expert) = super::optimizer_states(r, p, b);
        let strategy = format!("FSDP {}", self.sharding_strategy.name());
        let mut s = States::default();
        if self.cpu_offload {
            // CPUOffload(offload_params=True): the shards of parameters, gradients and
            // optimizer states of each GPU of the node live in CPU memory
            s.cpu = Term::new(
                n(l.gpus_on_node(), "GPUs on the node")
                    * shard(
                        (bytes(b.weight) + bytes(b.grad) + bytes(b.master)).label("") * params()
                            + opt_dense
                            + opt_expert,
                        group,
                        label,
                    ),
                "torch.distributed.fsdp CPUOffload(offload_params=True): parameter, gradient and optimizer-state shards in CPU memory",
            );
        } else {
            let source = format!(
                "{strategy}: sharded over the shard group; {}",
                super::regime_source(r)
            );
            s.weights = Term::new(
                shard(bytes(b.weight) * params(), group, label),
                source.clone(),
            );
            s.gradients = Term::new(
                shard(super::grad_bytes(b) * params(), group, label),
                source.clone(),
            );
            s.master = Term::new(shard(bytes(b.master) * params(), group, label), source);
            s.optimizer = Term::new(
                shard(opt_dense + opt_expert, group, label),
                format!("{strategy}: sharded; {}", super::optimizer_source(r)),
            );
            s.step_temporaries = Term::new(
                shard(
                    super::torch_step_temporaries(r, p, b, p.total()),
                    group,
                    label,
                ),
                super::TORCH_STEP_SOURCE,
            );
        }
        s.gathered = Term::new(
            bytes(compute) * self.unsharded(p),
            format!(
                "{strategy} (FSDP1): root unit not resharded after forward; BACKWARD_PRE prefetch of the next unit; units all-gathered in MixedPrecision param_dtype"
            ),
        );
        if group > 1 {
            s.gathered_grads = Term::new(
                bytes(compute) * n(p.largest_layer, "params of the largest layer"),
                format!("{strategy}: unsharded gradients of the unit being reduce-scattered"),
            );
        }
        s
    }
    fn weight_shard(&self, l: &Layout) -> u64 {
        self.group(l)
    }
    fn gathered_elements(&self, p: &RankParams) -> Expr {
        self.unsharded(p)
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
}
