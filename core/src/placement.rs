//! Placement: which pipeline stages are evaluated, how many micro-batches each holds, which
//! parameter tensors one GPU of a stage holds after tensor, pipeline and expert parallelism,
//! and the counts the engines shard ([`RankParams`]).

use crate::model::{FfnKind, ParamGroup, Part, Shape};
use crate::optimizer::StateCount;
use crate::problem::Resolved;

/// A pipeline stage evaluated as a candidate most loaded GPU.
#[derive(Debug, Clone)]
pub(crate) struct Stage {
    pub index: u64,
    pub dense_layers: u64,
    pub moe_layers: u64,
    pub has_embedding: bool,
    pub has_head: bool,
    /// Micro-batches whose activations the stage holds at once, as a rational
    /// (numerator, denominator) to keep the interleaved penalty exact.
    pub inflight: (u64, u64),
}

impl Stage {
    /// Decoder layers on the stage.
    pub fn layers(&self) -> u64 {
        self.dense_layers + self.moe_layers
    }
}

/// The candidate most loaded stages: the first (embedding, most in-flight micro-batches),
/// the second (the fullest middle stage) and the last (final norm, LM head, loss).
pub(crate) fn stages(r: &Resolved) -> Vec<Stage> {
    let l = &r.layout;
    let pp = l.pipeline_parallel_size;
    let ga = r.config.training.gradient_accumulation_steps;
    let mut candidates: Vec<u64> = vec![0, 1.min(pp - 1), pp - 1];
    candidates.dedup();
    candidates
        .into_iter()
        .map(|s| {
            let (start, end) = l.stage_layers.range(s, pp);
            let moe_layers = (start..end)
                .filter(|&i| r.arch.ffn_kind(i) == FfnKind::Moe)
                .count() as u64;
            // 1F1B: stage s holds min(pp - s, micro-batches) micro-batches; the interleaved
            // schedule multiplies stage 0's by 1 + (pp - 1) / (pp * vpp)
            // (Narayanan et al. 2021, Sec. 2.2; Megatron theoretical_memory_usage.py).
            let vpp = l.virtual_pipeline_parallel_size;
            let inflight = if pp == 1 {
                (1, 1)
            } else if vpp > 1 && s == 0 {
                (pp * vpp + pp - 1, vpp)
            } else {
                ((pp - s).min(ga), 1)
            };
            Stage {
                index: s,
                dense_layers: end - start - moe_layers,
                moe_layers,
                has_embedding: s == 0,
                has_head: s == pp - 1,
                inflight,
            }
        })
        .collect()
}

/// A parameter group held by the GPUs of a pipeline stage, with how many times the stage
/// holds it (its layer count) and which decoder-layer kind it belongs to (`None`:
/// embeddings, final norm, LM head).
pub(crate) struct StageGroup {
    pub group: ParamGroup,
    pub times: u64,
    pub layer: Option<FfnKind>,
}

impl StageGroup {
    /// Copies of the group one GPU holds per layer (routed experts are divided over
    /// expert parallelism).
    pub fn copies(&self, ep: u64) -> u64 {
        if self.group.part == Part::Experts {
            self.group.copies.div_ceil(ep)
        } else {
            self.group.copies
        }
    }
}

/// Every parameter group of a pipeline stage.
pub(crate) fn stage_groups(r: &Resolved, stage: &Stage) -> Vec<StageGroup> {
    let a = &r.arch;
    let inv = a.inventory();
    let mut out = Vec::new();
    let mut push = |groups: &[ParamGroup], times: u64, layer: Option<FfnKind>| {
        if times > 0 {
            out.extend(groups.iter().map(|g| StageGroup {
                group: g.clone(),
                times,
                layer,
            }));
        }
    };
    push(&inv.dense_layer, stage.dense_layers, Some(FfnKind::Dense));
    push(&inv.moe_layer, stage.moe_layers, Some(FfnKind::Moe));
    let first: Vec<ParamGroup> = inv
        .model
        .iter()
        .filter(|g| g.part == Part::Embeddings)
        .cloned()
        .collect();
    let mut last: Vec<ParamGroup> = inv
        .model
        .iter()
        .filter(|g| g.part != Part::Embeddings)
        .cloned()
        .collect();
    if r.layout.pipeline_parallel_size > 1 && a.tie_word_embeddings {
        // Megatron keeps a copy of the tied word embedding on the last stage for the
        // output layer (its gradients are all-reduced with the first stage's).
        last.extend(first.iter().filter(|g| g.name != "wpe").cloned());
    }
    if stage.has_embedding {
        push(&first, 1, None);
    }
    if stage.has_head {
        push(&last, 1, None);
    }
    out
}

/// Parameter counts of one GPU of a stage (elements), as the engines shard them.
#[derive(Debug, Default, Clone)]
pub(crate) struct RankParams {
    /// Elements not in routed experts.
    pub dense: u64,
    /// Elements of routed experts.
    pub expert: u64,
    /// Elements of linear-layer weight matrices (autocast copies, fp8 caches).
    pub linear: u64,
    /// Elements of the tied embedding matrix when it also serves as the output layer here.
    pub tied_head: u64,
    /// Linear-weight elements outside the decoder layers (an untied LM head).
    pub root_linear: u64,
    /// Linear-weight elements of the largest decoder layer.
    pub layer_linear: u64,
    /// Largest single module (ZeRO-3 gathers module by module).
    pub largest_module: u64,
    /// Largest decoder layer (an FSDP unit).
    pub largest_layer: u64,
    /// Embeddings, final norm and LM head (the FSDP root unit).
    pub root: u64,
    /// Tensors below ZeRO-3's persistence threshold (kept whole).
    pub small: u64,
    /// Optimizer-state elements of dense and expert tensors, unsharded.
    pub opt_dense: StateCount,
    pub opt_expert: StateCount,
}

impl RankParams {
    /// Every parameter element the GPU holds.
    pub fn total(&self) -> u64 {
        self.dense + self.expert
    }
}

/// Parameters held by one GPU of `stage`; tensors under `persistence` elements count as
/// `small` (ZeRO-3 keeps them whole).
pub(crate) fn rank_params(r: &Resolved, stage: &Stage, persistence: u64) -> RankParams {
    let tp = r.layout.tensor_parallel_size;
    let ep = r.layout.expert_parallel_size;
    let layout = r.config.training.optimizer.info().layout;
    let mut p = RankParams::default();
    let mut layer_totals = [0u64; 2];
    let mut layer_linear = [0u64; 2];
    for sg in stage_groups(r, stage) {
        let (g, times) = (&sg.group, sg.times);
        let copies = sg.copies(ep);
        let shapes = g.rank_shapes(tp);
        let one: u64 = shapes.iter().map(|(r, c)| r * c).sum();
        let n = one * copies;
        let is_expert = g.part == Part::Experts;
        if is_expert {
            p.expert += n * times;
        } else {
            p.dense += n * times;
        }
        if matches!(g.shape, Shape::Linear { .. }) {
            let lin = shapes[0].0 * shapes[0].1 * copies;
            p.linear += lin * times;
            match sg.layer {
                Some(FfnKind::Dense) => layer_linear[0] += lin,
                Some(FfnKind::Moe) => layer_linear[1] += lin,
                None => p.root_linear += lin * times,
            }
        }
        // transformers 5 stores each MoE block's experts as one module
        let module = if is_expert { n } else { one };
        p.largest_module = p.largest_module.max(module);
        let small: u64 = shapes
            .iter()
            .map(|(r, c)| r * c)
            .filter(|n| *n < persistence)
            .sum();
        p.small += small * copies * times;
        let count = if is_expert {
            &mut p.opt_expert
        } else {
            &mut p.opt_dense
        };
        for (rows, cols) in &shapes {
            count.add(layout, *rows, *cols, copies * times);
        }
        match sg.layer {
            Some(FfnKind::Dense) => layer_totals[0] += n,
            Some(FfnKind::Moe) => layer_totals[1] += n,
            None => p.root += n * times,
        }
    }
    p.largest_layer = layer_totals[0].max(layer_totals[1]);
    p.layer_linear = layer_linear[0].max(layer_linear[1]);
    if stage.has_head && r.arch.tie_word_embeddings {
        // the output layer multiplies by the tied embedding matrix: a linear weight too
        // (autocast casts it for the head's matmul)
        p.tied_head = r.arch.vocab_size.div_ceil(tp) * r.arch.hidden_size;
    }
    p
}
