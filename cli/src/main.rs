//! `gpu-mem-calc`: the command-line shell over `calc-core`.
//!
//! Exit codes: 0 success, 2 bad input (a field error, an unreadable file), 70 internal
//! error. Nothing is computed here: every number comes from `calc_core`.

use calc_core::units::{fmt_count, fmt_gib, fmt_int};
use calc_core::{COMPONENTS, Estimate, OVERHEADS};
use calc_core::{Config, FieldError, presets};
use clap::{Parser, Subcommand};
use comfy_table::{Cell, CellAlignment, Table, presets::UTF8_BORDERS_ONLY};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Writes a line to stdout; a closed pipe (`... | head`) ends the program quietly.
fn emit(line: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    if let Err(e) = writeln!(o, "{line}")
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}

macro_rules! out {
    ($($t:tt)*) => { emit(&format!($($t)*)) };
}

#[derive(Parser)]
#[command(
    name = "gpu-mem-calc",
    version,
    about = "GPU memory calculator for training, fine-tuning and serving LLMs"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Estimate per-GPU memory for a config file (schema 2; schema 1 and the seed format are migrated).
    Calculate {
        /// The config JSON file.
        #[arg(long)]
        config: PathBuf,
        /// A Hugging Face config.json to use as the model (the config may then omit `model`).
        #[arg(long)]
        hf_config: Option<PathBuf>,
        /// Print the estimate as JSON.
        #[arg(long)]
        json: bool,
        /// After the table, each term of the peak with its formula (numbers substituted)
        /// and its source.
        #[arg(long)]
        explain: bool,
    },
    /// Quick estimate: a model size ("7B") or preset id, a GPU count and an engine.
    Quick {
        /// A parameter count such as 7B or 70B, or a model preset id (see `presets`).
        model: String,
        /// Number of GPUs (all data parallel unless --tp/--pp are given).
        #[arg(long, default_value_t = 1)]
        gpus: u64,
        /// The training engine (`engine.type`).
        #[arg(long, default_value = "ddp", value_parser = clap::builder::PossibleValuesParser::new(calc_core::engines::ENGINES))]
        engine: String,
        /// ZeRO stage, for the engines that run DeepSpeed ZeRO.
        #[arg(long, default_value_t = 3)]
        zero_stage: u8,
        /// GPU preset id (default h100-80gb).
        #[arg(long)]
        gpu: Option<String>,
        #[arg(long, default_value_t = 1)]
        micro_batch_size: u64,
        #[arg(long, default_value_t = 2048)]
        seq_len: u64,
        /// fp32, amp_bf16, amp_fp16, bf16, fp16, fp8.
        #[arg(long, default_value = "amp_bf16")]
        precision: String,
        #[arg(long, default_value = "adamw")]
        optimizer: String,
        /// none, selective or full.
        #[arg(long, default_value = "none")]
        recompute: String,
        #[arg(long, default_value_t = 1)]
        tp: u64,
        #[arg(long, default_value_t = 1)]
        pp: u64,
        #[arg(long)]
        json: bool,
        /// Each term of the peak with its formula and source.
        #[arg(long)]
        explain: bool,
    },
    /// Check a config file; print its field errors.
    Validate { file: PathBuf },
    /// Inverse questions: the largest micro-batch or sequence, the fewest GPUs, the most
    /// concurrent sequences (inference).
    Solve {
        /// The config JSON file.
        #[arg(long)]
        config: PathBuf,
        /// The largest micro-batch that fits (training).
        #[arg(long, group = "target")]
        max_batch: bool,
        /// The longest sequence (training) or context (inference) that fits.
        #[arg(long, group = "target")]
        max_seq: bool,
        /// The fewest GPUs that fit.
        #[arg(long, group = "target")]
        min_gpus: bool,
        /// The most concurrent sequences (inference).
        #[arg(long, group = "target")]
        max_concurrency: bool,
        #[arg(long)]
        json: bool,
    },
    /// Which layout to run: every valid TP x PP x CP x EP x DP layout, engine, recomputation
    /// and micro-batch for a model, GPU, GPU count and global batch, the fastest that fit
    /// first (estimated step time).
    Plan {
        /// A model preset id (see `presets`) or a Hugging Face config.json file.
        #[arg(long, required_unless_present = "config")]
        model: Option<String>,
        /// A base config file (model, precision, optimizer, attention, LoRA, ...); its layout,
        /// engine, recomputation and micro-batch are what the search chooses.
        #[arg(long)]
        config: Option<PathBuf>,
        /// GPU preset id (default: the config's, else h100-80gb).
        #[arg(long)]
        gpu: Option<String>,
        /// GPUs in the job.
        #[arg(long, default_value_t = 8)]
        gpus: u64,
        /// Also try every GPU count up to this (powers of two within a node, then whole
        /// nodes).
        #[arg(long)]
        max_gpus: Option<u64>,
        /// GPUs per node (`hardware.gpus_per_node`): tensor parallelism stays within a node
        /// and a larger job is whole nodes (default: the config's, else 8).
        #[arg(long)]
        gpus_per_node: Option<u64>,
        /// Tokens per sequence (`training.seq_len`; default: the config's, else 2048).
        #[arg(long)]
        seq: Option<u64>,
        /// Tokens per optimizer step, such as 4M (decimal suffixes): each layout rounds it to
        /// whole sequences per data-parallel rank.
        #[arg(long, value_parser = calc_core::units::parse_count, group = "batch")]
        global_batch_tokens: Option<u64>,
        /// Sequences per optimizer step, exactly (only data-parallel sizes dividing it).
        #[arg(long, value_parser = calc_core::units::parse_count, group = "batch")]
        global_batch: Option<u64>,
        /// fp32, amp_bf16, amp_fp16, bf16, fp16, fp8 (default: the config's, else amp_bf16).
        #[arg(long)]
        precision: Option<String>,
        /// Engines allowed, comma-separated (default: all).
        #[arg(long, value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(calc_core::engines::ENGINES))]
        engines: Vec<String>,
        /// Recomputation allowed, comma-separated: none, selective, selective_op, full
        /// (default: all).
        #[arg(long, value_delimiter = ',')]
        recompute: Vec<String>,
        /// Also try offloading (ZeRO-Offload, ZeRO-3 parameter offload, FSDP CPU offload).
        #[arg(long)]
        allow_offload: bool,
        /// Fraction of GPU memory a plan must leave free.
        #[arg(long, default_value_t = 0.05)]
        headroom: f64,
        /// Plans to print.
        #[arg(long, default_value_t = 10)]
        top: u64,
        #[arg(long)]
        json: bool,
    },
    /// Print the DeepSpeed ds_config.json of a deepspeed / megatron_deepspeed config.
    DsConfig {
        /// The config JSON file.
        #[arg(long)]
        config: PathBuf,
    },
    /// Import another tool's file (ds_config.json, TrainingArguments JSON, accelerate /
    /// torchtune / Axolotl YAML, torchtitan TOML, Megatron-LM arguments, a vllm serve or SGLang
    /// launch_server command line; recognised automatically) and print our config. What was
    /// read, ignored and taken from the base goes to stderr.
    Import {
        /// The file to import (`-` reads standard input).
        file: PathBuf,
        /// The model: a preset id or a Hugging Face config.json (wins over the file's).
        #[arg(long)]
        model: Option<String>,
        /// A config JSON to start from (default: the schema's defaults).
        #[arg(long)]
        base: Option<PathBuf>,
        /// Print the whole import as JSON (format, config, read, ignored, from_base).
        #[arg(long)]
        json: bool,
    },
    /// Export a config in another tool's format (the formats of `import`).
    Export {
        /// The config JSON file.
        #[arg(long)]
        config: PathBuf,
        /// deepspeed, hf_trainer, accelerate, torchtune, axolotl, torchtitan, megatron, vllm,
        /// sglang.
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(calc_core::formats::Format::ALL.map(calc_core::formats::Format::id)))]
        format: String,
    },
    /// The config estimated on every GPU preset: which GPUs fit.
    Fits {
        /// The config JSON file.
        #[arg(long)]
        config: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// List the model, GPU and example presets.
    Presets {
        #[arg(long)]
        json: bool,
    },
    /// Exact parameter counts of a Hugging Face config.json (or of a config's model).
    Params {
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

/// An error for the user: exit code 2 with the messages.
struct BadInput(Vec<String>);

impl From<Vec<FieldError>> for BadInput {
    fn from(e: Vec<FieldError>) -> Self {
        BadInput(e.iter().map(|e| e.to_string()).collect())
    }
}

fn read_json(path: &Path, what: &str) -> Result<Value, BadInput> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| BadInput(vec![format!("{what} {}: {e}", path.display())]))?;
    serde_json::from_str(&text).map_err(|e| {
        BadInput(vec![format!(
            "{what} {}: invalid JSON: {e}",
            path.display()
        )])
    })
}

fn run(cli: Cli) -> Result<(), BadInput> {
    match cli.cmd {
        Cmd::Calculate {
            config,
            hf_config,
            json,
            explain,
        } => {
            let mut doc = read_json(&config, "config")?;
            if let Some(hf) = hf_config {
                let hf = read_json(&hf, "--hf-config")?;
                let Value::Object(root) = &mut doc else {
                    return Err(BadInput(vec!["config: must be a JSON object".into()]));
                };
                let model = root
                    .entry("model")
                    .or_insert_with(|| Value::Object(Map::new()));
                let Value::Object(m) = model else {
                    return Err(BadInput(vec!["model: must be a JSON object".into()]));
                };
                if m.contains_key("preset") {
                    return Err(BadInput(vec![
                        "model.preset: give either a preset or --hf-config, not both".into(),
                    ]));
                }
                m.insert("hf_config".into(), hf);
            }
            let cfg = Config::from_value(doc)?;
            let est = calc_core::estimate(&cfg)?;
            print_estimate(&est, json, explain);
        }
        Cmd::Quick {
            model,
            gpus,
            engine,
            zero_stage,
            gpu,
            micro_batch_size,
            seq_len,
            precision,
            optimizer,
            recompute,
            tp,
            pp,
            json,
            explain,
        } => {
            let model_section = if presets::model_preset(&model).is_some() {
                json!({ "preset": model })
            } else {
                json!({ "num_parameters": model })
            };
            let mut engine = json!({ "type": engine });
            if calc_core::config::Engine::of_kind(engine["type"].as_str().unwrap_or_default())
                .is_some_and(|e| e.option_keys().contains(&"zero_stage"))
            {
                engine["zero_stage"] = json!(zero_stage);
            }
            let mut hardware = json!({ "num_gpus": gpus });
            if let Some(g) = gpu {
                hardware["gpu"] = json!(g);
            }
            let doc = json!({
                "schema_version": calc_core::SCHEMA_VERSION,
                "model": model_section,
                "training": {"micro_batch_size": micro_batch_size, "seq_len": seq_len, "precision": precision,
                             "optimizer": optimizer, "activation_checkpointing": recompute},
                "parallelism": {"tensor_parallel_size": tp, "pipeline_parallel_size": pp},
                "engine": engine,
                "hardware": hardware,
            });
            let cfg = Config::from_value(doc)?;
            let est = calc_core::estimate(&cfg)?;
            print_estimate(&est, json, explain);
        }
        Cmd::Plan {
            model,
            config,
            gpu,
            gpus,
            max_gpus,
            gpus_per_node,
            seq,
            global_batch_tokens,
            global_batch,
            precision,
            engines,
            recompute,
            allow_offload,
            headroom,
            top,
            json,
        } => {
            let mut doc = match &config {
                Some(path) => read_json(path, "config")?,
                None => json!({ "schema_version": calc_core::SCHEMA_VERSION }),
            };
            let Value::Object(root) = &mut doc else {
                return Err(BadInput(vec!["config: must be a JSON object".into()]));
            };
            if let Some(m) = model {
                let section = if Path::new(&m).is_file() {
                    json!({ "hf_config": read_json(Path::new(&m), "--model")? })
                } else {
                    json!({ "preset": m })
                };
                root.insert("model".into(), section);
            }
            let mut set = |section: &str, key: &str, v: Value| {
                if let Value::Object(o) = root
                    .entry(section)
                    .or_insert_with(|| Value::Object(Map::new()))
                {
                    o.insert(key.into(), v);
                }
            };
            if let Some(g) = gpu {
                set("hardware", "gpu", json!(g));
            }
            if let Some(n) = gpus_per_node {
                set("hardware", "gpus_per_node", json!(n));
            }
            if let Some(s) = seq {
                set("training", "seq_len", json!(s));
            }
            if let Some(p) = precision {
                set("training", "precision", json!(p));
            }
            let base = Config::from_value(doc)?;
            let mut req = calc_core::plan::PlanRequest {
                config: base,
                num_gpus: Some(gpus),
                max_gpus,
                global_batch_sequences: global_batch,
                global_batch_tokens,
                allow_offload,
                min_headroom: headroom,
                top,
                ..Default::default()
            };
            if !engines.is_empty() {
                req.engines = engines;
            }
            if !recompute.is_empty() {
                req.recompute = serde_json::from_value(json!(recompute))
                    .map_err(|e| BadInput(vec![format!("--recompute: {e}")]))?;
            }
            let r = calc_core::plan::plan(&req)?;
            if json {
                out!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
            } else {
                print_plans(&r);
            }
        }
        Cmd::DsConfig { config } => {
            let cfg = Config::from_value(read_json(&config, "config")?)?;
            let ds = calc_core::export::deepspeed_config(&cfg)?;
            out!("{}", serde_json::to_string_pretty(&ds).unwrap_or_default());
        }
        Cmd::Import {
            file,
            model,
            base,
            json,
        } => {
            let text = if file.as_os_str() == "-" {
                let mut t = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut t)
                    .map_err(|e| BadInput(vec![format!("stdin: {e}")]))?;
                t
            } else {
                std::fs::read_to_string(&file)
                    .map_err(|e| BadInput(vec![format!("{}: {e}", file.display())]))?
            };
            let base = match base {
                Some(p) => Config::from_value(read_json(&p, "--base")?)?,
                None => Config::default(),
            };
            let model = match model {
                Some(m) if Path::new(&m).is_file() => Some(
                    calc_core::config::ModelSpec::hf_config(read_json(Path::new(&m), "--model")?),
                ),
                Some(m) => match json!({ "preset": m }) {
                    Value::Object(o) => Some(calc_core::config::ModelSpec(o)),
                    _ => None,
                },
                None => None,
            };
            let im = calc_core::formats::import(&text, &base, model.as_ref())?;
            if json {
                out!("{}", serde_json::to_string_pretty(&im).unwrap_or_default());
            } else {
                eprintln!("recognised: {}", im.format_name);
                for r in &im.read {
                    eprintln!(
                        "  read     {} = {}  ->  {} = {}",
                        r.from, r.value, r.to, r.set
                    );
                }
                for i in &im.ignored {
                    eprintln!("  ignored  {}: {}", i.key, i.reason);
                }
                eprintln!(
                    "  from the base (not in this format): {}",
                    im.from_base.join(", ")
                );
                out!("{}", im.config.to_json_pretty());
            }
        }
        Cmd::Export { config, format } => {
            let cfg = Config::from_value(read_json(&config, "config")?)?;
            let f = calc_core::formats::Format::from_id(&format)
                .ok_or_else(|| BadInput(vec![format!("--format {format}: unknown")]))?;
            let text = calc_core::formats::export(&cfg, f)?;
            out!("{}", text.trim_end());
        }
        Cmd::Fits { config, json } => {
            let cfg = Config::from_value(read_json(&config, "config")?)?;
            let fits = calc_core::export::gpu_fits(&cfg)?;
            if json {
                out!(
                    "{}",
                    serde_json::to_string_pretty(&fits).unwrap_or_default()
                );
            } else {
                for f in &fits {
                    out!(
                        "{:<28} {:>10} of {:>10}  {}",
                        f.name,
                        fmt_gib(f.total_bytes),
                        fmt_gib(f.gpu_memory_bytes),
                        if f.fits { "fits" } else { "does not fit" }
                    );
                }
            }
        }
        Cmd::Validate { file } => {
            let doc = read_json(&file, "config")?;
            let cfg = Config::from_value(doc)?;
            calc_core::validate(&cfg)?;
            out!(
                "{}: valid (schema_version {})",
                file.display(),
                cfg.schema_version
            );
        }
        Cmd::Solve {
            config,
            max_batch,
            max_seq,
            min_gpus,
            max_concurrency,
            json,
        } => {
            use calc_core::solve::{Target, solve};
            let target = match (max_batch, max_seq, min_gpus, max_concurrency) {
                (true, ..) => Target::MaxMicroBatch,
                (_, true, ..) => Target::MaxSequence,
                (_, _, true, _) => Target::MinGpus,
                (_, _, _, true) => Target::MaxConcurrency,
                _ => {
                    return Err(BadInput(vec![
                        "choose one of --max-batch, --max-seq, --min-gpus, --max-concurrency"
                            .into(),
                    ]));
                }
            };
            let cfg = Config::from_value(read_json(&config, "config")?)?;
            let s = solve(&cfg, target)?;
            if json {
                out!("{}", serde_json::to_string_pretty(&s).unwrap_or_default());
            } else {
                out!("{}", s.message);
                if let Some(e) = &s.estimate {
                    out!(
                        "at that value: {} of {} per GPU ({:.1} %), {} estimates",
                        fmt_gib(e.total_bytes),
                        fmt_gib(e.gpu_memory_bytes),
                        100.0 * e.utilization,
                        s.evaluations
                    );
                }
            }
        }
        Cmd::Presets { json } => print_presets(json),
        Cmd::Params { file, json } => {
            let doc = read_json(&file, "file")?;
            // a calculator config (has a `model` section) or a bare config.json
            let spec = match doc.get("model") {
                Some(Value::Object(m)) if doc.get("model_type").is_none() => {
                    calc_core::config::ModelSpec(m.clone())
                }
                _ => calc_core::config::ModelSpec::hf_config(doc.clone()),
            };
            let counts = calc_core::param_counts(&spec)?;
            if json {
                out!(
                    "{}",
                    serde_json::to_string_pretty(&counts).unwrap_or_default()
                );
            } else {
                let mut t = table(&["component", "parameters", ""]);
                let c = &counts;
                for (name, n) in [
                    ("embeddings", c.embeddings),
                    ("attention", c.attention),
                    ("mlp", c.mlp),
                    ("experts", c.experts),
                    ("shared_experts", c.shared_experts),
                    ("router", c.router),
                    ("norms", c.norms),
                    ("lm_head", c.lm_head),
                    ("vision", c.vision),
                ] {
                    if n > 0 {
                        t.add_row(vec![
                            Cell::new(name),
                            right(fmt_int(n)),
                            right(fmt_count(n)),
                        ]);
                    }
                }
                t.add_row(vec![
                    Cell::new("total"),
                    right(fmt_int(c.total)),
                    right(fmt_count(c.total)),
                ]);
                if c.active_per_token != c.language_model {
                    t.add_row(vec![
                        Cell::new("active per token"),
                        right(fmt_int(c.active_per_token)),
                        right(fmt_count(c.active_per_token)),
                    ]);
                }
                out!("{t}");
            }
        }
    }
    Ok(())
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY);
    t.set_header(header.to_vec());
    t
}

fn right(s: String) -> Cell {
    Cell::new(s).set_alignment(CellAlignment::Right)
}

fn print_plans(r: &calc_core::plan::PlanResult) {
    out!("{}", r.message);
    if r.plans.is_empty() {
        return;
    }
    let mut t = table(&[
        "#",
        "plan",
        "per GPU",
        "headroom",
        "step (s)",
        "tokens/s/GPU",
        "MFU",
        "limited by",
    ]);
    for p in &r.plans {
        t.add_row(vec![
            right(p.rank.to_string()),
            Cell::new(&p.summary),
            right(fmt_gib(p.total_bytes)),
            right(fmt_gib(p.headroom_bytes.max(0) as u64)),
            right(format!("{:.3}", p.step.seconds)),
            right(format!("{:.0}", p.step.tokens_per_second_per_gpu)),
            right(format!("{:.1} %", 100.0 * p.step.mfu)),
            Cell::new(&p.step.limiter),
        ]);
    }
    out!("{t}");
    out!(
        "global batch {} sequences asked (in tokens: each plan rounds it per data-parallel rank); {} candidates, {} timed (the others' lower bound ranked them behind), {} memory estimates, {} skipped (a smaller micro-batch did not fit), {} rejected by validation",
        fmt_int(r.global_batch_sequences),
        fmt_int(r.candidates),
        fmt_int(r.timed),
        fmt_int(r.estimates),
        fmt_int(r.pruned),
        fmt_int(r.invalid)
    );
}

fn print_estimate(e: &Estimate, json: bool, explain: bool) {
    if json {
        out!("{}", serde_json::to_string_pretty(e).unwrap_or_default());
        return;
    }
    let l = &e.layout;
    let active = if e.params.active_per_token != e.params.total {
        format!(
            ", {} active per token",
            fmt_count(e.params.active_per_token)
        )
    } else {
        String::new()
    };
    out!(
        "{} ({} parameters{active}) on {} x {}",
        e.model.name,
        fmt_count(e.params.total),
        l.num_gpus,
        e.gpu.name
    );
    out!(
        "layout: DP {} x TP {} x PP {} x CP {}{}; most loaded: {}; peak in {}",
        l.data_parallel_size,
        l.tensor_parallel_size,
        l.pipeline_parallel_size,
        l.context_parallel_size,
        if l.expert_parallel_size > 1 {
            format!(" (EP {})", l.expert_parallel_size)
        } else {
            String::new()
        },
        e.most_loaded,
        e.peak_phase
    );
    let mut t = table(&["component", "GiB", "% of GPU"]);
    let pct = |b: u64| format!("{:.1}", 100.0 * b as f64 / e.gpu_memory_bytes.max(1) as f64);
    let gib = |b: u64| format!("{:.2}", b as f64 / calc_core::units::GIB as f64);
    for name in COMPONENTS {
        let b = e.components[*name];
        if b > 0 {
            t.add_row(vec![
                Cell::new(name.replace('_', " ")),
                right(gib(b)),
                right(pct(b)),
            ]);
        }
    }
    t.add_row(vec![
        Cell::new("= peak allocated"),
        right(gib(e.peak_allocated_bytes)),
        right(pct(e.peak_allocated_bytes)),
    ]);
    for name in OVERHEADS {
        let b = e.overheads[*name];
        if b > 0 {
            t.add_row(vec![
                Cell::new(format!("+ {}", name.replace('_', " "))),
                right(gib(b)),
                right(pct(b)),
            ]);
        }
    }
    t.add_row(vec![
        Cell::new("= total"),
        right(gib(e.total_bytes)),
        right(pct(e.total_bytes)),
    ]);
    t.add_row(vec![
        Cell::new("GPU memory"),
        right(gib(e.gpu_memory_bytes)),
        right("100.0".into()),
    ]);
    out!("{t}");
    if e.fits {
        out!(
            "fits: yes, {} free ({:.1} % used)",
            fmt_gib(e.headroom_bytes as u64),
            100.0 * e.utilization
        );
    } else if e.headroom_bytes >= 0 {
        // the GPU holds it; what does not: the node's CPU memory or the serving KV cache
        let why = if !e.cpu_fits() {
            format!(
                "the offloaded states need {} of CPU memory per node and the node has {}",
                fmt_gib(e.cpu_memory_bytes),
                fmt_gib(e.gpu.node_cpu_memory_bytes)
            )
        } else {
            "the KV cache does not hold one request of max_model_len tokens".to_string()
        };
        out!(
            "fits: NO, {why} (the GPU itself has {} free)",
            fmt_gib(e.headroom_bytes as u64)
        );
    } else {
        out!(
            "fits: NO, {} short ({:.1} % of the GPU)",
            fmt_gib(e.headroom_bytes.unsigned_abs()),
            100.0 * e.utilization
        );
    }
    if let Some(first) = e
        .first_step_peak_bytes
        .filter(|&f| f != e.peak_allocated_bytes)
    {
        out!(
            "first iteration: peak allocated {} (the optimizer states are created by its step)",
            fmt_gib(first)
        );
    }
    if e.cpu_memory_bytes > 0 {
        let node = e.gpu.node_cpu_memory_bytes;
        out!(
            "CPU memory per node for offloaded states: {} of the node's {} ({}; hardware.cpu_memory_gb)",
            fmt_gib(e.cpu_memory_bytes),
            fmt_gib(node),
            if e.cpu_fits() { "fits" } else { "does not fit" }
        );
    }
    if let Some(s) = &e.serving {
        match s.engine {
            calc_core::config::InferenceEngine::Sglang => out!(
                "SGLang: static budget {} (mem_fraction_static {} x memory free before loading), weights {}, prefill chunk activations {}, process group {}",
                fmt_gib(s.budget_bytes),
                s.gpu_memory_utilization,
                fmt_gib(s.weights_bytes),
                fmt_gib(s.peak_activation_bytes),
                fmt_gib(s.non_torch_bytes)
            ),
            _ => out!(
                "vLLM: budget {} ({} x GPU), weights {}, profile activations {}, non-torch {}",
                fmt_gib(s.budget_bytes),
                s.gpu_memory_utilization,
                fmt_gib(s.weights_bytes),
                fmt_gib(s.peak_activation_bytes),
                fmt_gib(s.non_torch_bytes)
            ),
        }
        let engine = match s.engine {
            calc_core::config::InferenceEngine::Sglang => "SGLang",
            _ => "vLLM",
        };
        out!("{engine}: {}", s.message);
    }
    if e.trainable_params != e.params.total && e.mode == calc_core::Mode::Training {
        out!(
            "trainable parameters (LoRA adapters): {}",
            fmt_int(e.trainable_params)
        );
    }
    if e.nvme_bytes > 0 {
        out!(
            "NVMe space per node for offloaded states: {}",
            fmt_gib(e.nvme_bytes)
        );
    }
    if e.stages.len() > 1 {
        let stages: Vec<String> = e
            .stages
            .iter()
            .map(|s| {
                format!(
                    "stage {}: {} layers, {} peak",
                    s.stage,
                    s.layers,
                    fmt_gib(s.peak_allocated_bytes)
                )
            })
            .collect();
        out!("pipeline stages: {}", stages.join("; "));
    }
    for w in &e.warnings {
        out!("warning: {w}");
    }
    if explain {
        out!("");
        out!("how each term is computed (peak phase: {}):", e.peak_phase);
        for d in &e.details {
            out!(
                "{} = {} ({} bytes)",
                d.name.replace('_', " "),
                fmt_gib(d.bytes),
                fmt_int(d.bytes)
            );
            out!("  = {}", d.formula);
            out!("  source: {}", d.source);
        }
    }
}

fn print_presets(json: bool) {
    if json {
        let examples: Vec<_> = presets::example_configs().iter().map(|(f, _)| f).collect();
        let v = json!({"models": presets::model_presets(), "gpus": presets::gpu_presets(), "examples": examples});
        out!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return;
    }
    let mut t = table(&["model preset", "parameters", "published"]);
    for p in presets::model_presets() {
        let n = calc_core::param_counts(&calc_core::config::ModelSpec::preset(&p.id))
            .map(|c| fmt_count(c.total))
            .unwrap_or_default();
        t.add_row(vec![
            Cell::new(&p.id),
            right(n),
            Cell::new(&p.published_params),
        ]);
    }
    out!("{t}");
    let mut t = table(&["GPU preset", "name", "memory"]);
    for g in presets::gpu_presets() {
        t.add_row(vec![
            Cell::new(&g.id),
            Cell::new(&g.name),
            right(fmt_gib(g.memory_bytes)),
        ]);
    }
    out!("{t}");
    out!(
        "example configs (presets/examples): {}",
        presets::example_configs()
            .iter()
            .map(|(f, _)| *f)
            .collect::<Vec<_>>()
            .join(", ")
    );
}

fn main() -> ExitCode {
    // Any panic is a bug: report it instead of aborting silently.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("internal error (please report): {info}");
    }));
    let cli = Cli::parse();
    match std::panic::catch_unwind(|| run(cli)) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(BadInput(msgs))) => {
            for m in msgs {
                eprintln!("error: {m}");
            }
            ExitCode::from(2)
        }
        Err(_) => ExitCode::from(70),
    }
}
