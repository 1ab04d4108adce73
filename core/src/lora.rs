//! LoRA / QLoRA adapters (Hu et al. 2021; PEFT `LoraConfig`): for each targeted linear
//! layer `W (out x in)`, trainable `A (r x in)` and `B (out x r)`: `r x (in + out)`
//! parameters per module (and per expert, for targeted MoE experts).
//!
//! Targets follow PEFT 0.21 on transformers 5:
//! * a module is targeted when its name equals a target or ends with `.` + target;
//!   `"all-linear"` is every `nn.Linear` but the LM head (tuners_utils.py
//!   `_maybe_include_all_linear_layers`);
//! * transformers 5 fuses the routed experts into stacked parameters and makes the router a
//!   module of its own: neither is an `nn.Linear`, so neither is targeted as a module;
//! * for the families transformers converts from v4 checkpoints (mixtral, and qwen3_moe,
//!   deepseek_v2 / v3 through the qwen2_moe pattern: `conversion_mapping.py`), PEFT maps the
//!   v4 names (`gate`, `gate_proj` / `up_proj` / `down_proj` or `w1` / `w3` / `w2`) to
//!   parameter targets on the experts and the router (utils/transformers_weight_conversion.py
//!   `_convert_peft_config_moe`; `"all-linear"` includes those names): one LoRA per expert,
//!   gate and up fused into one of rank `2r`. Modules with those leaf names (dense and
//!   shared-expert MLPs) are then no longer module targets.

use crate::config::{Lora, TargetModules};
use crate::model::{Inventory, ModelArch, ParamGroup, Part, Shape};
use std::borrow::Cow;

/// `true` if module `name` is targeted by `target` (PEFT suffix match: `name` is `target`
/// or ends with `.` + `target`).
pub fn matches(name: &str, target: &str) -> bool {
    name == target
        || name
            .strip_suffix(target)
            .is_some_and(|head| head.ends_with('.'))
}

/// Linear modules of the decoder layers, by name (what `target_modules` may name).
pub fn linear_module_names(a: &ModelArch) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for g in present_groups(&a.inventory()) {
        if matches!(g.shape, Shape::Linear { .. }) {
            let leaf = g.name.rsplit('.').next().unwrap_or(&g.name).to_string();
            for n in [g.name.to_string(), leaf] {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
    }
    names
}

/// The parameter groups of the decoder layers the model has (a model without dense layers,
/// gpt-oss or Mixtral, has no dense MLP modules to target).
fn present_groups(inv: &Inventory) -> impl Iterator<Item = &ParamGroup> {
    let dense = if inv.num_dense_layers > 0 {
        &inv.dense_layer[..]
    } else {
        &[]
    };
    let moe = if inv.num_moe_layers > 0 {
        &inv.moe_layer[..]
    } else {
        &[]
    };
    dense.iter().chain(moe)
}

/// `true` for the groups that are `nn.Linear` modules in transformers 5: not the fused
/// routed experts, not the router (a module of its own).
fn is_linear_module(g: &ParamGroup) -> bool {
    matches!(g.shape, Shape::Linear { .. })
        && !matches!(g.part, Part::Experts | Part::LmHead | Part::Embeddings)
        && !(g.part == Part::Router && g.name == "gate")
}

/// The v4 names PEFT maps to expert and router parameters in a converted family: the
/// router, the experts' gate, up and down projections.
fn converted_names(a: &ModelArch) -> Option<[&'static str; 4]> {
    if a.moe.is_none() || !a.family().peft_moe_conversion {
        return None;
    }
    let (gate, up, _, down) = a.mlp_names();
    Some(["gate", gate, up, down])
}

/// `lora`'s targets on a model as PEFT resolves them, worked out once per problem
/// ([`crate::problem::Resolved::lora_targets`]): the target names (`"all-linear"` becomes the
/// leaf names of every `nn.Linear`, and in a converted family the v4 expert and router
/// names), the family's v4 names, and which of the decoder layers' modules get an adapter.
#[derive(Debug, Clone, PartialEq)]
pub struct Targets {
    names: Vec<String>,
    converted: Option<[&'static str; 4]>,
    rank: u64,
    /// Every decoder-layer module the model has (as named in the inventory) and whether it
    /// gets an adapter.
    modules: Vec<(Cow<'static, str>, bool)>,
}

/// PEFT's default `target_modules` when a `LoraConfig` names none:
/// `TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING[model.config.model_type]`
/// (peft/utils/constants.py; `_prepare_adapter_config` raises "Please specify
/// `target_modules` in `peft_config`" for a model type the mapping lacks). The mapping's
/// decoder models; a multimodal model's top-level type (llava, gemma3, qwen2_5_vl) is not
/// in it.
pub fn peft_default_targets(a: &ModelArch) -> Option<&'static [&'static str]> {
    if a.vision.is_some() {
        return None;
    }
    Some(match a.model_type.as_str() {
        "llama" | "llama4" | "mistral" | "mixtral" | "qwen2" | "qwen3" | "gemma" | "gemma2"
        | "gemma3_text" | "stablelm" | "opt" | "gptj" | "gpt_neo" | "bart" => &["q_proj", "v_proj"],
        "gpt2" | "gpt_bigcode" => &["c_attn"],
        "bloom" | "gpt_neox" | "chatglm" | "falcon" | "RefinedWeb" | "RefinedWebModel" => {
            &["query_key_value"]
        }
        "phi" => &["q_proj", "v_proj", "fc1", "fc2"],
        "codegen" => &["qkv_proj"],
        "mpt" => &["Wqkv"],
        "btlm" => &["c_proj", "c_attn"],
        _ => return None,
    })
}

/// The targets `lora` puts adapters on: its `target_modules`, else PEFT's default for the
/// model ([`peft_default_targets`]); `None` when neither exists (a validation error).
pub fn effective_targets(a: &ModelArch, lora: &Lora) -> Option<TargetModules> {
    lora.target_modules.clone().or_else(|| {
        peft_default_targets(a)
            .map(|t| TargetModules::List(t.iter().map(|s| s.to_string()).collect()))
    })
}

impl Targets {
    /// The targets of `lora` on `a`, whose inventory is `inv`.
    pub fn with_inventory(a: &ModelArch, inv: &Inventory, lora: &Lora) -> Targets {
        let converted = converted_names(a);
        let names = match effective_targets(a, lora) {
            None => Vec::new(),
            Some(TargetModules::List(t)) => t,
            Some(TargetModules::All(_)) => {
                let mut names: Vec<String> = Vec::new();
                for g in present_groups(inv).filter(|g| is_linear_module(g)) {
                    let leaf = g.name.rsplit('.').next().unwrap_or(&g.name).to_string();
                    if !names.contains(&leaf) {
                        names.push(leaf);
                    }
                }
                for n in converted.into_iter().flatten() {
                    if !names.iter().any(|x| x == n) {
                        names.push(n.to_string());
                    }
                }
                names
            }
        };
        let mut t = Targets {
            names,
            converted,
            rank: lora.rank,
            modules: Vec::new(),
        };
        t.modules = present_groups(inv)
            .map(|g| (g.name.clone(), t.params(g, 1) > 0))
            .collect();
        t
    }

    /// `true` if the decoder-layer module called `name` (as in the parameter inventory:
    /// `q_proj`, `experts.gate_proj`, `shared_experts.down_proj`) gets an adapter; a name
    /// outside the inventory is matched against the targets as PEFT matches modules.
    pub fn module(&self, name: &str) -> bool {
        match self.modules.iter().find(|(n, _)| n == name) {
            Some(&(_, targeted)) => targeted,
            None => self.names.iter().any(|x| matches(name, x)),
        }
    }

    /// [`Targets::module`] of the module `prefix` + `leaf` (`"experts."`, `"down_proj"`),
    /// without building the name when the inventory has it.
    pub fn module_at(&self, prefix: &str, leaf: &str) -> bool {
        match self
            .modules
            .iter()
            .find(|(n, _)| n.strip_prefix(prefix) == Some(leaf))
        {
            Some(&(_, targeted)) => targeted,
            None => self.module(&format!("{prefix}{leaf}")),
        }
    }

    /// Trainable adapter parameters of the whole model whose inventory is `inv`.
    pub fn total_params(&self, inv: &Inventory) -> u64 {
        let layer = |groups: &[ParamGroup]| -> u64 {
            groups.iter().map(|g| self.params(g, 1) * g.copies).sum()
        };
        layer(&inv.dense_layer) * inv.num_dense_layers + layer(&inv.moe_layer) * inv.num_moe_layers
    }

    /// `true` if a target names `old` (PEFT suffix matching).
    fn named(&self, old: &str) -> bool {
        self.names.iter().any(|x| matches(x, old))
    }

    /// Adapter parameters of one copy of group `g`, split over `tp` tensor-parallel ranks;
    /// 0 when `g` is not targeted. A fused gate/up expert adapter (rank `2r` over `in` and
    /// `2 x inter`) is counted half on each of the two groups.
    pub fn params(&self, g: &ParamGroup, tp: u64) -> u64 {
        let Shape::Linear {
            in_features,
            out_features,
            ..
        } = g.shape
        else {
            return 0;
        };
        if matches!(g.part, Part::LmHead | Part::Embeddings) {
            return 0;
        }
        let rank = self.rank;
        let targeted = match self.converted {
            Some([router, gate, up, down]) => {
                let leaf = g.name.rsplit('.').next().unwrap_or(&g.name);
                match g.part {
                    Part::Experts if leaf == down => self.named(down),
                    Part::Experts if leaf == gate || leaf == up => {
                        if self.named(gate) && self.named(up) {
                            // one adapter of rank 2r on the fused (2 x inter, in) parameter
                            return rank * (in_features + 2 * out_features.div_ceil(tp.max(1)));
                        }
                        false
                    }
                    Part::Experts => false,
                    Part::Router if g.name == router => self.named(router),
                    // the v4 names became parameter targets: not module targets any more
                    _ => self.names.iter().any(|x| {
                        ![router, gate, up, down].iter().any(|o| matches(x, o))
                            && matches(&g.name, x)
                    }),
                }
            }
            None => is_linear_module(g) && self.names.iter().any(|x| matches(&g.name, x)),
        };
        if targeted {
            adapter_params(g, rank, tp)
        } else {
            0
        }
    }
}

/// Why PEFT refuses `lora`'s targets on this model, if it does: in a converted MoE family
/// the experts' gate and up projections are one fused parameter, so a list naming one of
/// them without the other fails (`_convert_peft_config_moe`: "Cannot convert PEFT
/// target(s) ... because they are fused into gate_up_proj").
pub fn fused_target_error(a: &ModelArch, lora: &Lora) -> Option<String> {
    let [_, gate, up, _] = converted_names(a)?;
    let Some(TargetModules::List(t)) = effective_targets(a, lora) else {
        return None;
    };
    let named = |old: &str| t.iter().any(|x| matches(x, old));
    (named(gate) != named(up)).then(|| {
        format!(
            "transformers 5 fuses the experts' {gate} and {up} into one gate_up_proj parameter and PEFT cannot target one without the other: name both or neither"
        )
    })
}

/// Adapter parameters of one copy of a targeted group split over `tp` tensor-parallel ranks
/// (A and B follow the base layer's split: column-parallel layers split B, row-parallel
/// layers split A). Saturates at `u64::MAX` for a rank past `training.lora.rank`'s bound
/// (resolve refuses one; this public function is not guarded by it).
pub fn adapter_params(g: &ParamGroup, rank: u64, tp: u64) -> u64 {
    match g.shape {
        Shape::Linear {
            in_features,
            out_features,
            ..
        } => {
            let tp = tp.max(1);
            let (a, b) = match g.tp {
                crate::model::TpSplit::Column | crate::model::TpSplit::Vocab => {
                    (in_features, out_features.div_ceil(tp))
                }
                crate::model::TpSplit::Row => (in_features.div_ceil(tp), out_features),
                crate::model::TpSplit::Replicated => (in_features, out_features),
            };
            rank.saturating_mul(a.saturating_add(b))
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffix_matching() {
        assert!(matches("q_proj", "q_proj"));
        assert!(matches("experts.gate_proj", "gate_proj"));
        assert!(!matches("experts.gate_proj", "gate"));
        assert!(!matches("gate_up_proj", "up_proj"));
        assert!(!matches("up_proj", "gate_up_proj"));
        assert!(matches("model.layers.0.mlp.up_proj", "mlp.up_proj"));
        assert!(!matches("", "q_proj"));
    }
}
