//! Runs the numeric estimate (`estimate_peak`) of one benchmark case N times, for counting
//! its instructions under callgrind (BENCHMARKS.md): the count of N runs less that of one,
//! divided by N - 1, is the instructions per estimate, repeatable whatever the machine's
//! load (criterion's times are not, on a shared machine).
//!
//! `cargo build --profile release-native -p calc-core --example peak_loop`, then
//! `valgrind --tool=callgrind target/release-native/examples/peak_loop zero3 20001`.
//! The cases are the benchmark's (`core/benches/cases/mod.rs`): `zero3`, `fsdp2`, `moe`,
//! `vllm`, `gpt2`, `qwen`.
use calc_core::Config;

#[path = "../benches/cases/mod.rs"]
mod cases;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let case = args.get(1).map(String::as_str).unwrap_or("zero3");
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let doc = cases::case(case).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    });
    let config = Config::from_value(doc).expect("a valid benchmark config");
    let r = calc_core::resolve::resolve(&config).expect("a valid benchmark config");
    let mut fits = 0;
    for _ in 0..n {
        fits += usize::from(calc_core::estimate_peak(std::hint::black_box(&r)).fits);
    }
    println!("{case}: {n} estimates, {fits} fit");
}
