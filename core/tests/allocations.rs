//! The numeric path (`estimate_peak`, the plan search's per-candidate estimate) builds no
//! strings and no maps (issue 15): counted by this test binary's allocator on every valid
//! case of the golden grid (every preset x engine x mode x a few layouts, training options
//! and inference runtimes).
//!
//! What may still allocate is a few buffers per evaluated stage, never one per term,
//! parameter group or text: the list of evaluated stages (1 per estimate) and, where
//! several are evaluated, each decoder-layer kind's tensors once (`placement::LayerCache`,
//! counted below as part of the stages' share); per stage (at most 4 are evaluated,
//! `placement::stages`) the GPU's tensor list (`RankParams.tensors`),
//! FSDP2's per-moment gathered memory (boxed), and the stored weights' parts
//! (`weights::stage_weights`: LoRA's frozen base, serving) or the serving runtimes' stage
//! profiles. A string per term or a name list per group
//! would exceed the bound below on any model: a decoder layer has 9 or more parameter
//! groups and an estimate adds up more than a hundred terms (LoRA built a target list per
//! linear layer: up to 3 406 allocations per estimate before 2026-11-24).

mod common;
use common::grid::cases;

use calc_core::{Config, estimate_peak, resolve::resolve};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    /// Allocations made by this thread (tests run on several threads).
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

struct Counting;

// SAFETY: forwards every call to the system allocator unchanged; the counter is a
// const-initialized thread-local `Cell`, which does not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract, passed on
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: the caller's contract, passed on
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract, passed on
        unsafe { System.realloc(p, l, size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// 1 for the stage list, 3 per stage over at most 4 stages (see the module's comment).
const MAX_ALLOCATIONS: u64 = 1 + 3 * 4;

#[test]
fn numeric_estimates_allocate_no_strings_or_maps() {
    let (mut checked, mut most) = (0, (0, String::new()));
    for (name, doc) in cases() {
        let Ok(config) = Config::from_value(doc) else {
            continue;
        };
        let Ok(r) = resolve(&config) else { continue };
        let before = allocations();
        let peak = estimate_peak(&r);
        let n = allocations() - before;
        std::hint::black_box(peak);
        assert!(
            n <= MAX_ALLOCATIONS,
            "{name}: {n} allocations in one numeric estimate (at most {MAX_ALLOCATIONS})"
        );
        if n > most.0 {
            most = (n, name);
        }
        checked += 1;
    }
    // the grid's valid cases (as core/tests/numeric.rs counts them), LoRA and serving among them
    assert!(checked > 4_000, "{checked} cases");
    println!("most allocations: {} ({})", most.0, most.1);
}

#[test]
fn a_lora_estimate_builds_no_target_list() {
    // Llama-3.1-8B with adapters on every linear layer under FSDP2 on 8 GPUs: one stage, so
    // the stage list, its tensor list, the frozen base's storage parts and FSDP2's
    // per-moment memory (4); before the LoRA targets were worked out once per problem, 357
    // (a target list, the model's inventory and a formatted suffix per linear layer)
    let config = Config::from_json_str(
        r#"{"model": {"preset": "llama-3.1-8b"},
            "training": {"seq_len": 4096, "lora": {"rank": 16, "target_modules": "all-linear"}},
            "engine": {"type": "fsdp", "fsdp_version": 2},
            "hardware": {"num_gpus": 8, "gpu": "h100-80gb"}}"#,
    )
    .unwrap();
    let r = resolve(&config).unwrap();
    let before = allocations();
    std::hint::black_box(estimate_peak(&r));
    assert_eq!(allocations() - before, 4);
}
