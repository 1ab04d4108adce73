//! The shareable link's fragment (`#c=1.<base64url JSON>&p=<plan inputs>`), decoded as the
//! page decodes a pasted link; an accepted document is estimated.
#![no_main]
use libfuzzer_sys::fuzz_target;

// The page's codec, compiled here from its source instead of through the `web` crate: a
// fuzz build instruments every dependency, and `web` would bring the whole Leptos stack
// (about 200 crates, most of the fuzz build's minutes in CI). The module uses only
// calc-core, serde_json and base64.
#[path = "../../web/src/state.rs"]
#[allow(dead_code)]
mod state;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // half the inputs get the prefix, so that the decoder is reached
    let hash = if data.first().is_some_and(|b| b % 2 == 0) {
        format!("{}{text}", state::FRAGMENT_KEY)
    } else {
        text.to_string()
    };
    let _ = state::decode_plan_inputs(&hash);
    if let Some(Ok(doc)) = state::decode_fragment(&hash) {
        let config = calc_core::Config::from_value(doc).expect("an accepted link parses");
        gpu_mem_calc_fuzz::check_config(&config);
    }
});
