//! Plan search requests as JSON (the CLI's `plan --json` input and the npm package's
//! `plan`), searched when they parse.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(req) = serde_json::from_slice::<calc_core::plan::PlanRequest>(data) else {
        return;
    };
    match calc_core::plan::plan(&req) {
        Ok(result) => gpu_mem_calc_fuzz::assert_finite(&result),
        Err(errors) => gpu_mem_calc_fuzz::assert_errors_readable(&errors),
    }
});
