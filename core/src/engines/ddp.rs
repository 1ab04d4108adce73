//! PyTorch DistributedDataParallel (and a single GPU): every rank holds the whole model
//! states; the Reducer's gradient buckets are a second copy of the gradients unless they
//! are views.

use super::{DpTraffic, EngineModel, GradReduce, HostTransfers, Parallelism, Sizes, States};
use crate::activations::ModelCode;
use crate::config::DdpOptions;
use crate::error::Errors;
use crate::placement::RankParams;
use crate::precision::{Framework, StateBytes};
use crate::problem::{Layout, Resolved};
use crate::term::{Expr, Num, Term, Value};

impl EngineModel for DdpOptions {
    fn kind(&self) -> &'static str {
        "ddp"
    }
    fn label(&self) -> &'static str {
        "PyTorch DDP"
    }
    fn option_keys(&self) -> &'static [&'static str] {
        &["bucket_cap_mb", "gradient_as_bucket_view"]
    }
    fn precision(&self) -> (Framework, u8) {
        (Framework::Torch, 0)
    }
    fn model_code(&self) -> ModelCode {
        ModelCode::Transformers
    }
    fn parallelism(&self) -> Parallelism {
        Parallelism::DATA_ONLY
    }
    fn validate(&self, _: Sizes, _: Option<&Layout>, e: &mut Errors) {
        if !(self.bucket_cap_mb.is_finite()
            && self.bucket_cap_mb > 0.0
            && self.bucket_cap_mb <= 65536.0)
        {
            e.add(
                "engine.bucket_cap_mb",
                self.bucket_cap_mb,
                "must be a number from 0 to 65536 (MiB)",
            );
        }
    }
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
        true
    }
    fn torch_optimizer(&self) -> bool {
        true
    }
    fn supports_lora(&self) -> bool {
        true
    }
    fn traffic(&self, l: &Layout, _: crate::config::Precision, b: StateBytes) -> DpTraffic {
        // the Reducer all-reduces gradient buckets as backward produces them, on the last
        // micro-batch only (`no_sync` before it: HF Trainer, torchtune)
        DpTraffic {
            group: l.shard_group(),
            replicas: 1,
            grad_reduce: GradReduce::AllReduce,
            reduce_every_micro_batch: false,
            gathers_per_micro_batch: 0,
            gather_after_step: false,
            step_gather_overlapped: false,
            overlapped: true,
            grad_bytes: b.grad,
            param_bytes: b.weight,
            states_sharded: false,
            host: HostTransfers::None,
            edges: super::DpEdges::LastBucket,
            // never read: DDP holds whole parameters and gathers nothing
            // (`gathers_per_micro_batch` 0, no gather after the step)
            gather_ops: super::Collectives::Buckets { elements: u64::MAX },
            // `bucket_cap_mb` MiB of gradients per bucket (torch `nn/parallel/distributed.py`)
            reduce_ops: super::Collectives::Buckets {
                elements: ((self.bucket_cap_mb.max(0.0) * 1048576.0) as u64 / b.grad.max(1)).max(1),
            },
            float8_gather: false,
        }
    }
}

impl DdpOptions {
    /// DDP's model states (see [`EngineModel::states`]).
    fn states_of<N: Num>(&self, r: &Resolved, p: &RankParams, b: StateBytes) -> States<N> {
        let (n, bytes) = (N::n, N::bytes);
        let params = || n(p.total(), "params");
        let regime = super::regime_source::<N>(r);
        let (opt_dense, opt_expert): (N, N) = super::optimizer_states(r, p, b);
        let mut s = States {
            weights: Term::new(bytes(b.weight) * params(), regime.clone()),
            gradients: Term::new(super::grad_bytes::<N>(b) * params(), regime),
            master: Term::new(
                bytes(b.master) * params(),
                "ZeRO paper Sec. 3.1 (mixed-precision Adam keeps fp32 parameters)",
            ),
            optimizer: Term::new(opt_dense + opt_expert, super::optimizer_source(r)),
            step_temporaries: Term::new(
                super::torch_step_temporaries(r, p, b, p.total()),
                super::TORCH_STEP_SOURCE,
            ),
            grads_persistent: b.grad_accum > 0,
            ..States::default()
        };
        // DDP's Reducer allocates flat bucket tensors covering every gradient at
        // construction (torch/csrc/distributed/c10d/reducer.cpp initialize_buckets), alive
        // from then on; bucket_cap_mb (25) only sets how they are split. With
        // gradient_as_bucket_view the gradients are views into them (one copy, there from
        // the first forward); without, the buckets are a second copy of the gradients
        // (pytorch/pytorch#41954 measured ~1 GB less peak on a ~1 GB-parameter model with
        // bucket views).
        if r.layout.shard_group() > 1 {
            let source = "PyTorch DDP Reducer::initialize_buckets: flat gradient buckets over every parameter, allocated at construction";
            if self.gradient_as_bucket_view {
                s.gradients = Term::new(
                    s.gradients.expr,
                    crate::term::source!(N;
                        "{source}; gradient_as_bucket_view=true: the gradients are views into them"
                    ),
                );
                s.grads_persistent = true;
            } else {
                if N::REPORT {
                    s.warnings.push(format!(
                    "DDP's gradient buckets are a second copy of every gradient ({} per GPU): set engine.gradient_as_bucket_view to make the gradients views into them.",
                    crate::units::fmt_gib(b.grad * p.total())
                    ));
                }
                s.comm = Term::new(
                    bytes(b.grad) * params(),
                    crate::term::source!(N;
                        "{source}; gradient_as_bucket_view=false: a second copy of the gradients (pytorch/pytorch#41954)"
                    ),
                );
            }
        }
        s
    }
}
