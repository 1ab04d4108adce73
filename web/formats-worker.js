// The import and export of other tools' files (DeepSpeed, HF TrainingArguments, accelerate,
// torchtune, Axolotl, torchtitan, Megatron-LM, vLLM, SGLang) run in this worker, started the
// first time they are used: its wasm is the npm package's (wasm/, with calc-core's `formats`
// feature: the YAML, TOML and command-line parsers), which Trunk builds as a worker
// (index.html), so none of it is in the page's first load. sw.js caches both files at
// install, so they work offline after one visit.
// Messages: {id, call, args} with call one of CALLS; replies {id, ok} or {id, error,
// fieldErrors}. Paths are relative to this file (sub-path deploys).
importScripts('./gpu-mem-calc-wasm.js');
const ready = wasm_bindgen({ module_or_path: './gpu-mem-calc-wasm_bg.wasm' });
const CALLS = ['importConfig', 'exportConfig'];
onmessage = async (e) => {
  const { id, call, args } = e.data;
  try {
    if (!CALLS.includes(call)) throw new Error('unknown call ' + call);
    await ready;
    postMessage({ id, ok: wasm_bindgen[call](...args) });
  } catch (err) {
    postMessage({ id, error: String((err && err.message) || err), fieldErrors: (err && err.fieldErrors) || null });
  }
};
