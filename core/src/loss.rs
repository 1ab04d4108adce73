//! The loss over the vocabulary on the last pipeline stage: logits, their fp32 upcast,
//! log-softmax and its gradients, by loss implementation and model code.

use crate::activations::{ActCtx, ModelCode};
use crate::config::LossImpl;
use crate::problem::Resolved;
use crate::term::{Num, Term};

/// Memory of the output head and loss on the last pipeline stage, per GPU.
pub(crate) struct LossMemory<N: Num> {
    /// Peak inside the loss computation at the end of forward.
    pub forward: Term<N>,
    /// Peak while the loss is differentiated (first step of backward).
    pub backward: Term<N>,
    /// What stays alive for the rest of backward (the returned logits a training loop
    /// holds through `loss.backward()`).
    pub kept: Term<N>,
}

impl<N: Num> LossMemory<N> {
    /// No loss on this stage.
    pub fn none() -> LossMemory<N> {
        LossMemory {
            forward: Term::zero(),
            backward: Term::zero(),
            kept: Term::zero(),
        }
    }
}

/// Loss memory on the last stage; see [`LossMemory`].
pub(crate) fn loss_memory<N: Num>(r: &Resolved, c: &ActCtx) -> LossMemory<N> {
    let (n, bytes) = (N::n, N::bytes);
    let t = &r.config.training;
    let tokens = c.b * c.s;
    // vocabulary-parallel logits (Megatron; torchtitan loss_parallel), else every rank holds
    // the whole vocabulary (the LM head's output gathered: `Replicate()`)
    let v = if r.layout.loss_parallel || c.code == ModelCode::Megatron {
        r.arch.vocab_size.div_ceil(c.tp)
    } else {
        r.arch.vocab_size
    };
    let h = r.arch.hidden_size;
    let fp32 = r.bytes.activation == 4;
    // tokens x vocabulary (per TP rank) elements
    let logits = || n(tokens, "tokens") * n(v, "vocab");
    match (t.loss, c.code) {
        (LossImpl::Fused, _) => {
            // Liger fused linear cross-entropy: gradient of the hidden states (b s h) and of
            // the head weight (V h, fp32) computed in forward; one (h tokens x V) fp32 chunk
            // (its forward output and gradient)
            let fwd = n(tokens, "tokens") * n(h, "hidden") * bytes(c.act)
                + n(v, "vocab") * n(h, "hidden") * bytes(4)
                + n(h.min(tokens), "tokens per chunk") * n(v, "vocab") * bytes(4) * n(2, "");
            let source = "Liger-Kernel LigerFusedLinearCrossEntropyLoss: hidden-state and head-weight gradients computed in forward, fp32 logits one chunk at a time";
            LossMemory {
                forward: Term::new(fwd.clone(), source),
                backward: Term::new(fwd, source),
                kept: Term::zero(),
            }
        }
        (LossImpl::Standard, ModelCode::Megatron) => {
            // vocab_parallel_cross_entropy: fp32 softmax kept in place (4 B), its bf16
            // gradient for the output layer (2 B)
            let source = "Megatron-Core tensor_parallel/cross_entropy.py vocab_parallel_cross_entropy: fp32 softmax in place, half gradient for the output layer";
            LossMemory {
                forward: Term::new(logits() * bytes(4), source),
                backward: Term::new(logits() * (bytes(4) + bytes(c.act)).label(""), source),
                kept: Term::zero(),
            }
        }
        (LossImpl::Standard, ModelCode::Transformers) => {
            // transformers ForCausalLMLoss: logits (kept by the returned output), their fp32
            // upcast (`logits.float()`, the same tensor in fp32 training) feeding log_softmax,
            // whose output is saved: the forward peak is inside the loss, with all three
            // alive; backward adds the nll gradient and the log_softmax gradient (4 B each).
            // The logits stay alive (held by the returned output) for all of backward.
            // Gemma-2's final softcapping keeps tanh(logits / cap) beside the logits.
            let held = if fp32 { 4 } else { c.act };
            // torch loss_parallel (DTensor `_log_softmax_handler`) keeps an fp32 copy of the
            // shifted logits beside its output (measured: one more 4 B per element of the
            // vocabulary shard through the loss, forward and backward)
            let lp_copy = if c.tp > 1 && r.layout.loss_parallel {
                4
            } else {
                0
            };
            let upcast = if fp32 { 0 } else { 4 } + lp_copy;
            let softcap = if c.family.logit_softcapping { held } else { 0 };
            let source = "transformers loss_utils.py ForCausalLMLoss: logits, their fp32 upcast and log_softmax; backward adds the nll and log_softmax gradients (Gemma-2: tanh softcapping kept)";
            let held_bytes = || bytes(held) + n(softcap, "B softcapped");
            LossMemory {
                forward: Term::new(
                    logits()
                        * (held_bytes() + n(upcast, "B fp32 upcast") + n(4, "B log-softmax"))
                            .label(""),
                    source,
                ),
                backward: Term::new(
                    logits()
                        * (held_bytes()
                            + n(4, "B log-softmax")
                            + n(lp_copy, "B loss-parallel copy")
                            + n(4, "B nll gradient")
                            + n(4, "B log-softmax gradient"))
                        .label(""),
                    source,
                ),
                kept: Term::new(logits() * held_bytes().label(""), source),
            }
        }
        (LossImpl::Chunked, _) => {
            // torchtune CEWithChunkedOutputLoss (8 chunks): half logits kept whole, fp32
            // work one chunk at a time
            let held = if fp32 { 4 } else { c.act };
            let source = "torchtune CEWithChunkedOutputLoss (8 chunks): logits kept whole, fp32 upcast and gradients one chunk at a time";
            let kept = logits() * (bytes(held) + n(4, "B fp32 upcast")).label("");
            let elems = tokens * v;
            LossMemory {
                forward: Term::new(kept.clone(), source),
                backward: Term::new(
                    kept + n(elems.div_ceil(8), "elements per chunk") * bytes(8),
                    source,
                ),
                kept: Term::new(logits() * bytes(held), source),
            }
        }
    }
}
