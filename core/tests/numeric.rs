//! The numeric path (`estimate_peak`: the estimators computed with `term::Value`, no
//! formulas, maps or strings) against the full report (`estimate`, the same estimators
//! computed with `term::Expr`) on every case of the golden grid (every preset x engine x
//! mode x a few layouts, training options and inference runtimes): every number equal to
//! the byte.

mod common;
use common::grid::cases;

use calc_core::{Config, estimate, estimate_peak, resolve::resolve};

#[test]
fn numeric_path_equals_the_report_on_every_grid_case() {
    let mut compared = 0;
    for (name, doc) in cases() {
        let Ok(config) = Config::from_value(doc) else {
            continue;
        };
        let Ok(r) = resolve(&config) else { continue };
        let e = estimate(&config).expect("resolved configs estimate");
        let p = estimate_peak(&r);
        let report = calc_core::Peak {
            peak_allocated_bytes: e.peak_allocated_bytes,
            total_bytes: e.total_bytes,
            gpu_memory_bytes: e.gpu_memory_bytes,
            fits: e.fits,
            headroom_bytes: e.headroom_bytes,
            cpu_memory_bytes: e.cpu_memory_bytes,
            nvme_bytes: e.nvme_bytes,
            first_step_peak_bytes: e.first_step_peak_bytes,
        };
        assert_eq!(p, report, "{name}");
        compared += 1;
    }
    // every valid case of the grid: the golden file's lines without "errors"
    let golden = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/estimates.jsonl"),
    )
    .unwrap();
    let valid = golden.lines().filter(|l| !l.contains("\"errors\"")).count();
    assert_eq!(compared, valid);
}
