//! LoRA / QLoRA adapters (Hu et al. 2021; PEFT `LoraConfig`): for each targeted linear
//! layer `W (out x in)`, trainable `A (r x in)` and `B (out x r)`: `r x (in + out)`
//! parameters per module (and per expert, for targeted MoE experts).
//!
//! Targets follow PEFT's matching: a module is targeted when its name equals a target or
//! ends with `.` + target (so `gate_proj` also targets `experts.gate_proj`);
//! `"all-linear"` targets every linear layer of the decoder blocks but not the LM head.

use crate::config::{Lora, TargetModules};
use crate::model::{ModelArch, ParamGroup, Part, Shape};

/// `true` if module `name` is targeted by `target` (PEFT suffix match).
pub fn matches(name: &str, target: &str) -> bool {
    name == target || name.ends_with(&format!(".{target}"))
}

/// Linear modules of the decoder layers, by name (what `target_modules` may name).
pub fn linear_module_names(a: &ModelArch) -> Vec<String> {
    let inv = a.inventory();
    let mut names: Vec<String> = Vec::new();
    for g in inv.dense_layer.iter().chain(inv.moe_layer.iter()) {
        if matches!(g.shape, Shape::Linear { .. }) {
            let leaf = g.name.rsplit('.').next().unwrap_or(&g.name).to_string();
            for n in [g.name.clone(), leaf] {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
    }
    names
}

/// `true` if the linear group `g` gets an adapter under `lora`.
pub fn is_targeted(g: &ParamGroup, lora: &Lora) -> bool {
    if !matches!(g.shape, Shape::Linear { .. }) || matches!(g.part, Part::LmHead | Part::Embeddings)
    {
        return false;
    }
    match &lora.target_modules {
        TargetModules::All(_) => true,
        TargetModules::List(t) => t.iter().any(|t| matches(&g.name, t)),
    }
}

/// Adapter parameters of one copy of a targeted group split over `tp` tensor-parallel ranks
/// (A and B follow the base layer's split: column-parallel layers split B, row-parallel
/// layers split A).
pub fn adapter_params(g: &ParamGroup, rank: u64, tp: u64) -> u64 {
    match g.shape {
        Shape::Linear {
            in_features,
            out_features,
            ..
        } => {
            let tp = tp.max(1);
            match g.tp {
                crate::model::TpSplit::Column | crate::model::TpSplit::Vocab => {
                    rank * (in_features + out_features.div_ceil(tp))
                }
                crate::model::TpSplit::Row => rank * (in_features.div_ceil(tp) + out_features),
                crate::model::TpSplit::Replicated => rank * (in_features + out_features),
            }
        }
        _ => 0,
    }
}

/// Trainable adapter parameters of the whole model.
pub fn total_adapter_params(a: &ModelArch, lora: &Lora) -> u64 {
    let inv = a.inventory();
    let layer = |groups: &[ParamGroup]| -> u64 {
        groups
            .iter()
            .filter(|g| is_targeted(g, lora))
            .map(|g| adapter_params(g, lora.rank, 1) * g.copies)
            .sum()
    };
    layer(&inv.dense_layer) * inv.num_dense_layers + layer(&inv.moe_layer) * inv.num_moe_layers
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
    }
}
