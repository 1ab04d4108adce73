//! The estimator on structured random configs: documents built from the form's field table
//! (a model and GPU preset, a mode, a random subset of fields with values from their options
//! and bounds), mostly valid, so that the estimate itself is exercised.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|doc: gpu_mem_calc_fuzz::ArbitraryDoc| {
    match calc_core::Config::from_value(doc.0) {
        Ok(config) => gpu_mem_calc_fuzz::check_config(&config),
        Err(errors) => gpu_mem_calc_fuzz::assert_errors_readable(&errors),
    }
});
