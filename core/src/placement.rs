//! Placement: which pipeline stages are evaluated, how many micro-batches each holds, which
//! parameter tensors one GPU of a stage holds after tensor, pipeline and expert parallelism,
//! and the counts the engines shard ([`RankParams`]).

use crate::config::PipelineSchedule;
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
    /// Multi-token prediction modules trained on this stage (Megatron-Core puts them on the
    /// last pipeline stage).
    pub mtp_layers: u64,
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

/// The candidate stages of [`stages`], four at most, held inline.
pub(crate) type Stages = smallvec::SmallVec<[Stage; 4]>;

/// The candidate most loaded stages: the first (embedding, most in-flight micro-batches),
/// the second (the middle stage with the most in-flight micro-batches), the first of the
/// middle stages that hold one layer more (a serving runtime's split,
/// [`crate::problem::StageLayers::heavier_middles`]) and the last (final norm, LM head,
/// loss).
pub(crate) fn stages(r: &Resolved) -> Stages {
    let l = &r.layout;
    let pp = l.pipeline_parallel_size;
    let ga = r.config.training.gradient_accumulation_steps;
    // the first, second, first heavier middle and last stage, each once (pp 1 and 2 have
    // fewer), in order
    let heavier = l.stage_layers.first_heavier_middle(pp);
    let candidates = [Some(0), Some(1.min(pp - 1)), heavier, Some(pp - 1)];
    let mut out = Stages::new();
    for s in candidates.into_iter().flatten() {
        if out.last().is_some_and(|st: &Stage| st.index == s) {
            continue;
        }
        let (start, end) = l.stage_layers.range(s, pp);
        let (moe_layers, _) = l.stage_layer_kinds(&r.arch, s);
        let inflight = inflight(l.pipeline_schedule, pp, vpp_of(l), s, ga);
        out.push(Stage {
            index: s,
            dense_layers: end - start - moe_layers,
            moe_layers,
            has_embedding: s == 0,
            has_head: s == pp - 1,
            mtp_layers: if s == pp - 1 && r.model_code == crate::activations::ModelCode::Megatron {
                r.arch.num_nextn_predict_layers
            } else {
                0
            },
            inflight,
        });
    }
    out
}

fn vpp_of(l: &crate::problem::Layout) -> u64 {
    l.virtual_pipeline_parallel_size.max(1)
}

/// Micro-batches whose activations stage `s` of `pp` holds at once under `schedule`, as a
/// rational (model chunks in flight, chunks per micro-batch):
/// * GPipe (`ScheduleGPipe`): every forward before any backward, all `ga` micro-batches;
/// * 1F1B (`Schedule1F1B` `warmup_chunks = min(n_microbatches, num_stages - stage_index)`;
///   Megatron `get_forward_backward_func` without virtual stages): `min(pp - s, ga)`;
/// * interleaved 1F1B (`ScheduleInterleaved1F1B`; Megatron
///   `forward_backward_pipelining_with_interleaving`): `(pp - s - 1) x 2 + (vpp - 1) x pp`
///   warm-up forwards of model chunks plus the one in steady state, each chunk a `1 / vpp`
///   of the stage's layers, at most every chunk of every micro-batch (Narayanan et al.
///   2021, Sec. 2.2: stage 0 holds `(pp x vpp + pp - 1) / vpp` micro-batches).
pub(crate) fn inflight(
    schedule: PipelineSchedule,
    pp: u64,
    vpp: u64,
    s: u64,
    ga: u64,
) -> (u64, u64) {
    if pp == 1 {
        return (1, 1);
    }
    match schedule {
        PipelineSchedule::Gpipe => (ga, 1),
        PipelineSchedule::OneFOneB => ((pp - s).min(ga), 1),
        PipelineSchedule::Interleaved1F1B => {
            let chunks = ((pp - s - 1) * 2 + (vpp - 1) * pp + 1).min(ga * vpp);
            (chunks, vpp)
        }
    }
}

/// A parameter group held by the GPUs of a pipeline stage, with how many times the stage
/// holds it (its layer count).
pub(crate) struct StageGroup<'a> {
    pub group: &'a ParamGroup,
    pub times: u64,
}

impl StageGroup<'_> {
    /// Copies of the group one GPU holds per layer (see [`copies_on_gpu`]).
    pub fn copies(&self, ep: u64) -> u64 {
        copies_on_gpu(self.group, ep)
    }
}

/// Copies of `g` one GPU holds per layer: routed experts are divided over the `ep`
/// expert-parallel ranks.
fn copies_on_gpu(g: &ParamGroup, ep: u64) -> u64 {
    if g.part == Part::Experts {
        g.copies.div_ceil(ep)
    } else {
        g.copies
    }
}

/// One visit of [`for_each_stage_visit`]: a list of parameter groups the stage holds
/// `times` times: the whole group list of a decoder layer of kind `layer` (the same groups
/// on every stage, whatever `times`), or with `layer` `None` some of the root's and the MTP
/// modules'.
pub(crate) struct Visit<'i, 'g> {
    pub groups: &'i mut dyn Iterator<Item = &'g ParamGroup>,
    pub times: u64,
    pub layer: Option<FfnKind>,
}

/// Calls `f` with every list of parameter groups a pipeline stage holds, in the model's
/// order (the decoder layers', then the root's and the MTP modules'), skipping those held
/// 0 times. A visitor, not a vector: the plan search places parameters per candidate, and
/// the groups are borrowed from the model's inventory, neither copied nor collected.
pub(crate) fn for_each_stage_visit(r: &Resolved, stage: &Stage, mut f: impl FnMut(Visit)) {
    let a = &r.arch;
    let inv = &r.inventory;
    let mut visit =
        |groups: &mut dyn Iterator<Item = &ParamGroup>, times: u64, layer: Option<FfnKind>| {
            if times > 0 {
                f(Visit {
                    groups,
                    times,
                    layer,
                });
            }
        };
    visit(
        &mut inv.dense_layer.iter(),
        stage.dense_layers,
        Some(FfnKind::Dense),
    );
    visit(
        &mut inv.moe_layer.iter(),
        stage.moe_layers,
        Some(FfnKind::Moe),
    );
    let first = || inv.model.iter().filter(|g| g.part == Part::Embeddings);
    if stage.has_embedding {
        visit(&mut first(), 1, None);
    }
    if stage.has_head {
        let mut last = inv.model.iter().filter(|g| g.part != Part::Embeddings);
        visit(&mut last, 1, None);
        if r.layout.pipeline_parallel_size > 1 && a.tie_word_embeddings {
            // Megatron keeps a copy of the tied word embedding on the last stage for the
            // output layer (its gradients are all-reduced with the first stage's).
            visit(&mut first().filter(|g| g.name != "wpe"), 1, None);
        }
    }
    if stage.mtp_layers > 0 {
        // each MTP module: a decoder layer of the kind the next layer would have, its norms
        // and projection; on a last stage without the embedding, the embedding too
        // (Megatron-Core shares it with the MTP block)
        let kind = a.ffn_kind(a.num_hidden_layers);
        let layer = match kind {
            FfnKind::Dense => &inv.dense_layer,
            FfnKind::Moe => &inv.moe_layer,
        };
        visit(&mut layer.iter(), stage.mtp_layers, Some(kind));
        visit(&mut a.mtp_groups().iter(), stage.mtp_layers, None);
        if !stage.has_embedding && !a.tie_word_embeddings {
            visit(&mut first(), 1, None);
        }
    }
}

/// Calls `f` with every parameter group of a pipeline stage, in the model's order (see
/// [`for_each_stage_visit`]).
pub(crate) fn for_each_stage_group(r: &Resolved, stage: &Stage, mut f: impl FnMut(&StageGroup)) {
    for_each_stage_visit(r, stage, |v| {
        for group in v.groups {
            f(&StageGroup {
                group,
                times: v.times,
            });
        }
    });
}

/// Parameter tensors of one kind held by one GPU of a stage, by their first dimension (FSDP2
/// shards every parameter on dim 0: `torch.chunk` rows, `_fsdp_param.py`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dim0 {
    /// Rows on dim 0 (after tensor and expert parallelism): output features of a linear
    /// weight or bias, vocabulary rows of an embedding, the size of a norm, the local
    /// experts of a fused expert tensor (transformers 5 stores a MoE block's experts as
    /// `[experts, ...]` tensors).
    pub rows: u64,
    /// Elements per row.
    pub row_elems: u64,
    /// How many such tensors one unit holds (one decoder layer; the root).
    pub count: u64,
    /// Units holding them on the GPU (decoder layers of the kind; 1 for the root).
    pub times: u64,
    /// Routed-expert tensor.
    pub expert: bool,
    /// The decoder-layer kind it belongs to (`None`: embeddings, final norm, LM head).
    pub layer: Option<FfnKind>,
    /// An embedding table (first in the model's parameter order).
    pub embedding: bool,
    /// A decoder layer's linear weight that torchao's float8 training converts
    /// ([`crate::model::ParamGroup::float8_linear`]). Biases stay in `param_dtype`. Set
    /// under precision `fp8` only: its one reader, FSDP2's float8 all-gather, is refused
    /// with any other (`resolve::check_engine`).
    pub float8: bool,
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
    /// Of `linear`, the routed experts' weights (HF stores them as one 3-D tensor per layer
    /// and indexes one expert's slice per matmul).
    pub expert_linear: u64,
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
    /// Every parameter tensor by its first dimension (FSDP2's per-parameter shards).
    pub tensors: Vec<Dim0>,
}

impl RankParams {
    /// Every parameter element the GPU holds.
    pub fn total(&self) -> u64 {
        self.dense + self.expert
    }
}

/// Parameter elements one GPU of `stage` holds: [`RankParams::total`] without the rest of
/// [`rank_params`] (inference reports only this count).
pub(crate) fn rank_total(r: &Resolved, stage: &Stage) -> u64 {
    let tp = r.layout.tensor_parallel_size;
    let etp = r.layout.expert_tensor_parallel_size;
    let ep = r.layout.expert_parallel_size;
    let mut total = 0;
    for_each_stage_group(r, stage, |sg| {
        let is_expert = sg.group.part == Part::Experts;
        let shapes = sg.group.rank_shapes(if is_expert { etp } else { tp });
        let one: u64 = shapes.iter().map(|&(rows, cols)| rows * cols).sum();
        total += one * sg.copies(ep) * sg.times;
    });
    total
}

/// What one visit's groups ([`Visit`]) add to a GPU's [`RankParams`] per time the stage
/// holds them (the counts of `times` 1), and their largest module.
#[derive(Debug, Default, Clone)]
struct VisitSums {
    dense: u64,
    expert: u64,
    small: u64,
    linear: u64,
    expert_linear: u64,
    /// Elements of the visit's groups (`dense + expert`).
    elements: u64,
    largest_module: u64,
    opt_dense: StateCount,
    opt_expert: StateCount,
}

/// A decoder layer's sums and tensors (`times` 1), worked out once per estimate and added
/// to every stage that holds the layer ([`LayerCache`]).
type LayerSums = (VisitSums, Vec<Dim0>);

/// The decoder layers' [`LayerSums`] by kind (dense, MoE): one estimate's stages hold the
/// same layers, a different number of times, so those evaluating several stages work
/// each kind out once.
#[derive(Debug, Default)]
pub(crate) struct LayerCache([Option<LayerSums>; 2]);

/// What the per-group sums depend on besides the groups: the layout's sizes, the
/// optimizer's state layout, ZeRO-3's persistence threshold.
struct Placing {
    tp: u64,
    etp: u64,
    ep: u64,
    layout: crate::optimizer::StateLayout,
    fp8: bool,
    persistence: u64,
}

impl Placing {
    /// Sums the groups of one visit, pushing their tensors (each held `times` times) to
    /// `tensors`.
    fn sums(
        &self,
        groups: &mut dyn Iterator<Item = &ParamGroup>,
        layer: Option<FfnKind>,
        times: u64,
        tensors: &mut Vec<Dim0>,
    ) -> VisitSums {
        let mut v = VisitSums::default();
        for g in groups {
            let copies = copies_on_gpu(g, self.ep);
            let is_expert = g.part == Part::Experts;
            // routed experts split over the expert tensor-parallel ranks (Megatron-Core MoE
            // parallel folding), everything else over the tensor-parallel ranks
            let shapes = g.rank_shapes(if is_expert { self.etp } else { self.tp });
            let count = if is_expert {
                &mut v.opt_expert
            } else {
                &mut v.opt_dense
            };
            // one pass over the group's tensors (a weight and a bias at most): its
            // elements, those under the persistence threshold, optimizer-state counts,
            // dim-0 shapes
            let (mut one, mut small) = (0, 0);
            let float8_weight = self.fp8 && layer.is_some() && g.float8_linear();
            for (i, &(rows, cols)) in shapes.iter().enumerate() {
                let elems = rows * cols;
                one += elems;
                if elems < self.persistence {
                    small += elems;
                }
                count.add(self.layout, rows, cols, copies);
                tensors.push(if is_expert {
                    // one fused [local experts, rows, cols] tensor per layer
                    Dim0 {
                        rows: copies,
                        row_elems: elems,
                        count: 1,
                        times,
                        expert: true,
                        layer,
                        embedding: false,
                        float8: false,
                    }
                } else {
                    Dim0 {
                        rows,
                        row_elems: cols,
                        count: copies,
                        times,
                        expert: false,
                        layer,
                        embedding: g.part == Part::Embeddings,
                        // the weight (the first shape), not the bias
                        float8: float8_weight && i == 0,
                    }
                });
            }
            v.small += small * copies;
            let n = one * copies;
            if is_expert {
                v.expert += n;
            } else {
                v.dense += n;
            }
            v.elements += n;
            if matches!(g.shape, Shape::Linear { .. }) {
                let lin = shapes[0].0 * shapes[0].1 * copies;
                v.linear += lin;
                if is_expert {
                    v.expert_linear += lin;
                }
            }
            // transformers 5 stores each MoE block's experts as one module
            let module = if is_expert { n } else { one };
            v.largest_module = v.largest_module.max(module);
        }
        v
    }
}

impl RankParams {
    /// Adds a visit's sums `times` times: the decoder layer of kind `layer` counts once in
    /// the largest layer, the root's groups every time in the root unit.
    #[inline(always)]
    fn add(
        &mut self,
        v: &VisitSums,
        times: u64,
        layer: Option<FfnKind>,
        layers: &mut [[u64; 2]; 2],
    ) {
        self.dense += v.dense * times;
        self.expert += v.expert * times;
        self.small += v.small * times;
        self.linear += v.linear * times;
        self.expert_linear += v.expert_linear * times;
        self.largest_module = self.largest_module.max(v.largest_module);
        self.opt_dense = self.opt_dense.plus(v.opt_dense.times(times));
        self.opt_expert = self.opt_expert.plus(v.opt_expert.times(times));
        match layer {
            // [elements, linear-weight elements] of one layer of the kind
            Some(k) => {
                let l = &mut layers[usize::from(k == FfnKind::Moe)];
                l[0] += v.elements;
                l[1] += v.linear;
            }
            None => {
                self.root += v.elements * times;
                self.root_linear += v.linear * times;
            }
        }
    }
}

/// Parameters held by one GPU of `stage`; tensors under `persistence` elements count as
/// `small` (ZeRO-3 keeps them whole). With `cache`, a decoder layer's sums come from it (and
/// go into it the first time): the same for every stage of one estimate.
pub(crate) fn rank_params(
    r: &Resolved,
    stage: &Stage,
    persistence: u64,
    mut cache: Option<&mut LayerCache>,
) -> RankParams {
    let placing = Placing {
        tp: r.layout.tensor_parallel_size,
        etp: r.layout.expert_tensor_parallel_size,
        ep: r.layout.expert_parallel_size,
        layout: r.config.training.optimizer.info().layout,
        fp8: r.config.training.precision == crate::config::Precision::Fp8,
        persistence,
    };
    let inv = &r.inventory;
    // a weight per group, the root's groups at most twice (a last stage's tied embedding),
    // and with MTP modules a decoder layer's, their norms and projection and the embedding
    // again: a small model's list stays within the allocator's fast size classes
    let mtp = if stage.mtp_layers > 0 {
        inv.dense_layer.len().max(inv.moe_layer.len()) + 4 + inv.model.len()
    } else {
        0
    };
    // a bias per group too where the model has biases
    let a = &r.arch;
    let biased = a.qkv_bias
        || a.o_bias
        || a.mlp_bias
        || a.lm_head_bias
        || a.norm == crate::model::NormKind::LayerNorm;
    let mut p = RankParams {
        tensors: Vec::with_capacity(
            (inv.dense_layer.len() + inv.moe_layer.len() + inv.model.len() * 2 + mtp)
                * if biased { 2 } else { 1 },
        ),
        ..RankParams::default()
    };
    // per decoder-layer kind: [elements, linear-weight elements] of one layer
    let mut layers = [[0u64; 2]; 2];
    for_each_stage_visit(r, stage, |v| match (v.layer, cache.as_deref_mut()) {
        (Some(k), Some(cache)) => {
            let (sums, tensors) =
                cache.0[usize::from(k == FfnKind::Moe)].get_or_insert_with(|| {
                    let mut tensors = Vec::new();
                    (placing.sums(v.groups, v.layer, 1, &mut tensors), tensors)
                });
            p.add(sums, v.times, v.layer, &mut layers);
            p.tensors.extend(tensors.iter().map(|t| Dim0 {
                times: v.times,
                ..*t
            }));
        }
        _ => {
            let sums = placing.sums(v.groups, v.layer, v.times, &mut p.tensors);
            p.add(&sums, v.times, v.layer, &mut layers);
        }
    });
    p.largest_layer = layers[0][0].max(layers[1][0]);
    p.layer_linear = layers[0][1].max(layers[1][1]);
    if stage.has_head && r.arch.tie_word_embeddings {
        // the output layer multiplies by the tied embedding matrix: a linear weight too
        // (autocast casts it for the head's matmul)
        p.tied_head = r.arch.vocab_size.div_ceil(placing.tp) * r.arch.hidden_size;
    }
    p
}
