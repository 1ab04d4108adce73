//! Pasted calibration text (a probe record, a JSON object or `name: size` lines).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        match calc_core::accuracy::Calibration::parse(text) {
            Ok(c) => gpu_mem_calc_fuzz::assert_finite(&c),
            Err(errors) => gpu_mem_calc_fuzz::assert_errors_readable(&errors),
        }
    }
});
