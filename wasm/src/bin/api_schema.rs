//! Prints the JSON Schema of every type the JavaScript API takes or returns; the package
//! build turns it into `types.d.ts` (json-schema-to-typescript), so the TypeScript types
//! and their doc comments come from the Rust types.

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

fn main() {
    let mut generator = SchemaSettings::draft07().into_generator();
    let mut props = Map::new();
    macro_rules! root {
        ($($name:literal => $t:ty),* $(,)?) => {$(
            props.insert($name.into(), generator.subschema_for::<$t>().to_value());
        )*};
    }
    root! {
        "config" => calc_core::Config,
        "estimate" => calc_core::Estimate,
        "fieldError" => calc_core::FieldError,
        "modelArch" => calc_core::ModelArch,
        "modelSpec" => calc_core::config::ModelSpec,
        "paramCounts" => calc_core::ParamCounts,
        "presets" => gpu_mem_calc::Presets,
        "solution" => calc_core::solve::Solution,
        "target" => calc_core::solve::Target,
        "gpuFit" => calc_core::export::GpuFit,
        "planRequest" => calc_core::plan::PlanRequest,
        "planResult" => calc_core::plan::PlanResult,
        "format" => calc_core::formats::Format,
        "formatInfo" => calc_core::formats::FormatInfo,
        "imported" => calc_core::formats::Imported,
        "importOptions" => gpu_mem_calc::ImportOptions,
    }
    let defs: Map<String, Value> = generator.take_definitions(true).into_iter().collect();
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "GpuMemCalcApi",
        "description": "Every type of the gpu-mem-calc JavaScript API. Sizes are bytes unless a field says otherwise.",
        "type": "object",
        "properties": props,
        "definitions": defs,
    });
    println!("{}", serde_json::to_string_pretty(&schema).unwrap());
}
