//! FSDP1 (`FullyShardedDataParallel`, `ShardingStrategy`): flat-parameter shards in the
//! loaded dtype, units all-gathered in `MixedPrecision.param_dtype`, the root unit kept
//! unsharded after forward and the next unit prefetched.

use super::{States, shard};
use crate::config::{FsdpOptions, ShardingStrategy};
use crate::error::Errors;
use crate::limits;
use crate::placement::RankParams;
use crate::precision::StateBytes;
use crate::problem::{Layout, Resolved};
use crate::term::{Num, Term};

impl FsdpOptions {
    /// The FSDP1 sharding strategy (default `FULL_SHARD`).
    pub(super) fn strategy(&self) -> ShardingStrategy {
        self.sharding_strategy.unwrap_or_default()
    }
    /// GPUs one FSDP1 shard group spans.
    pub(super) fn group1(&self, l: &Layout) -> u64 {
        match self.strategy() {
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
    pub(super) fn unsharded1<N: Num>(&self, p: &RankParams) -> N {
        let n = N::n;
        match self.strategy() {
            ShardingStrategy::FullShard | ShardingStrategy::HybridShard => {
                n(p.root, "params of the root unit")
                    + n(2, "units") * n(p.largest_layer, "params of the largest layer")
            }
            ShardingStrategy::ShardGradOp => n(p.total(), "params"),
            ShardingStrategy::NoShard => N::zero(),
        }
    }
    pub(super) fn validate1(&self, layout: Option<&Layout>, e: &mut Errors) {
        if let Some(g) = self.hybrid_shard_group_size
            && e.range("engine.hybrid_shard_group_size", g, 1, limits::MAX_GPUS)
        {
            if self.strategy() != ShardingStrategy::HybridShard {
                e.add(
                    "engine.hybrid_shard_group_size",
                    g,
                    "only applies to sharding_strategy HYBRID_SHARD",
                );
            } else if let Some(l) = layout
                && !l.data_parallel_size.is_multiple_of(g)
            {
                e.add(
                    "engine.hybrid_shard_group_size",
                    g,
                    format!("must divide data_parallel_size ({})", l.data_parallel_size),
                );
            }
        }
    }
    pub(super) fn states1<N: Num>(&self, r: &Resolved, p: &RankParams, b: StateBytes) -> States<N> {
        let (n, bytes) = (N::n, N::bytes);
        let l = &r.layout;
        let group = self.group1(l);
        let label = "GPUs in the shard group";
        // FSDP keeps the FlatParameter shard in the loaded dtype (fp32 under AMP) and
        // all-gathers units in MixedPrecision param_dtype (2 bytes under AMP / bf16).
        let compute = self.param_bytes(r.config.training.precision, b.weight);
        let params = || n(p.total(), "params");
        let (opt_dense, opt_expert): (N, N) = super::optimizer_states(r, p, b);
        let strategy = crate::term::source!(N; "FSDP {}", self.strategy().name());
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
            let source = crate::term::source!(N;
                "{strategy}: sharded over the shard group; {}",
                super::regime_source::<N>(r)
            );
            s.weights = Term::new(
                shard(bytes(b.weight) * params(), group, label),
                source.clone(),
            );
            s.gradients = Term::new(
                shard(super::grad_bytes::<N>(b) * params(), group, label),
                source.clone(),
            );
            s.master = Term::new(shard(bytes(b.master) * params(), group, label), source);
            s.optimizer = Term::new(
                shard(opt_dense + opt_expert, group, label),
                crate::term::source!(N; "{strategy}: sharded; {}", super::optimizer_source(r)),
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
            bytes(compute) * self.unsharded1(p),
            crate::term::source!(N;
                "{strategy} (FSDP1): root unit not resharded after forward; BACKWARD_PRE prefetch of the next unit; units all-gathered in MixedPrecision param_dtype"
            ),
        );
        if group > 1 {
            s.gathered_grads = Term::new(
                bytes(compute) * n(p.largest_layer, "params of the largest layer"),
                crate::term::source!(N;
                    "{strategy}: unsharded gradients of the unit being reduce-scattered"
                ),
            );
        }
        s
    }
}
