"""Make a CPU / FakeTensor run allocate what the same run allocates on a CUDA GPU.

The probe measures on the CPU dispatch path (FakeTensorMode or real CPU tensors), where a few
PyTorch code paths differ from CUDA in what they keep in memory. Each difference found by
diffing the op-by-op trace of a forward pass on CPU against a fake-CUDA forward
(`probe/README.md`, "CPU vs CUDA") is emulated here, and only those:

* Dropout: on CUDA `torch.dropout` runs the fused `native_dropout` kernel, which saves a
  1-byte bool mask; on CPU it is decomposed into bernoulli_ / div_ / mul and the mask is kept
  in the input's dtype (2-4 bytes). `F.dropout` is routed to `native_dropout` here.
* Autocast fp32 ops: CUDA's autocast runs `pow` (and the other ops in FP32_OPS) in fp32;
  CPU's autocast list leaves them in bf16 (GPT-2 / Phi-2 `gelu_new` is the case that
  matters: its whole tanh approximation runs on fp32 copies on CUDA).
* SDPA with dropout: CPU's flash kernel has no dropout and falls back to the math path
  (materialising the s x s probabilities); CUDA's flash / memory-efficient kernels draw the
  dropout mask inside the kernel. Attention dropout is therefore set to 0 for sdpa/flash
  runs (`zero_attention_dropout`), which allocates what the CUDA kernels do.

Not emulated (see probe/README.md): autograd's InputBuffer adds gradients out of place under
any TorchDispatchMode (`isTensorSubclassLike`), so a tied embedding's two gradients are
summed into a third vocab x hidden tensor at the end of backward, where CUDA adds in place.
"""
import torch
import torch.nn.functional as F

# CUDA autocast fp32-policy ops (aten/src/ATen/autocast_mode.cpp, KERNEL_CUDA ... fp32) that
# CPU autocast leaves in lower precision and that transformer models call.
FP32_OPS = ["pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar", "exp", "log", "rsqrt",
            "reciprocal", "softplus", "log1p", "expm1"]

_lib = None
_orig_dropout = F.dropout


def _native_dropout(input, p=0.5, training=True, inplace=False):
    if training and p > 0.0 and not inplace and input.is_floating_point():
        return torch.ops.aten.native_dropout(input, p, True)[0]
    return _orig_dropout(input, p, training, inplace)


def _fp32_kernel(op):
    def kernel(*args, **kwargs):
        def up(a):
            if isinstance(a, torch.Tensor) and a.dtype in (torch.bfloat16, torch.float16):
                return a.float()
            return a
        args = [up(a) for a in args]
        with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)):
            return op(*args, **kwargs)
    return kernel


def install():
    """Install the emulations (idempotent)."""
    global _lib
    F.dropout = _native_dropout
    if _lib is None:
        _lib = torch.library.Library("aten", "IMPL")
        for name in FP32_OPS:
            base, _, overload = name.partition(".")
            op = getattr(getattr(torch.ops.aten, base), overload or "default")
            _lib.impl(name, _fp32_kernel(op), "AutocastCPU")


def zero_attention_dropout(config) -> None:
    """Attention-probability dropout off (what fused CUDA attention kernels allocate)."""
    for key in ("attn_pdrop", "attention_dropout", "attention_probs_dropout_prob"):
        for c in (config, getattr(config, "text_config", None)):
            if c is not None and getattr(c, key, None):
                setattr(c, key, 0.0)


def efficient_sdpa_for_unequal_head_dims() -> None:
    """SDPA with query/key heads wider than value heads (DeepSeek MLA: 192 vs 128): CUDA has
    no flash kernel for it and runs the memory-efficient one
    (`_scaled_dot_product_efficient_attention`: keeps the output and the log-sum-exp); CPU
    has neither and runs the math path, materializing the b x h x s x s probabilities.
    On fake tensors (whose CUDA kernels' shape functions run on any device) the unmasked,
    dropout-free call is routed to the efficient kernel, as CUDA dispatches it."""
    orig = F.scaled_dot_product_attention
    if getattr(orig, "_efficient_route", False):
        return

    def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        unequal = q.shape[-1] != v.shape[-1] and q.shape[1] == k.shape[1] == v.shape[1]
        if unequal and attn_mask is None and dropout_p == 0.0:
            return torch.ops.aten._scaled_dot_product_efficient_attention(
                q, k, v, None, True, 0.0, is_causal, scale=scale)[0]
        return orig(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                    enable_gqa=enable_gqa)
    sdpa._efficient_route = True
    F.scaled_dot_product_attention = sdpa


def answer_data_checks_as_real() -> None:
    """Under FakeTensorMode transformers cannot read tensor values, so it assumes packed
    sequences (`find_packed_sequence_indices`) and builds an explicit (b, 1, s, s) mask, which
    also turns off SDPA's native GQA (K/V get repeated per head). The probe's inputs are one
    unpadded sequence per row: answer the check as real tensors do (no packing)."""
    import transformers.masking_utils as mu
    mu.find_packed_sequence_indices = lambda position_ids: None
