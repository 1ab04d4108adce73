//! Config documents as JSON text: schema 2, schema 1 and the seed format (migrated), then
//! estimated; export -> import must give the same document.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        gpu_mem_calc_fuzz::check_config_text(text);
    }
});
