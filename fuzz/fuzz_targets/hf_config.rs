//! Hugging Face `config.json` text, parsed as the "Hugging Face model" import does, then
//! estimated as a config's model.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match calc_core::parse_hf_config_str(text) {
        Ok(arch) => {
            gpu_mem_calc_fuzz::assert_finite(&arch);
            let Ok(hf) = serde_json::from_str::<serde_json::Value>(text) else {
                return;
            };
            let doc = gpu_mem_calc_fuzz::hf_config_document(hf);
            if let Ok(config) = calc_core::Config::from_value(doc) {
                gpu_mem_calc_fuzz::check_config(&config);
            }
        }
        Err(errors) => gpu_mem_calc_fuzz::assert_errors_readable(&errors),
    }
});
