//! Upper bounds on inputs. They keep every product in the memory model far from integer
//! overflow and reject absurd values (10^20 parameters) with a clear message; each is far
//! above any model or cluster that exists.

/// `hidden_size` (and other per-token widths such as MLA ranks).
pub const MAX_HIDDEN: u64 = 1 << 20;
/// `num_hidden_layers`.
pub const MAX_LAYERS: u64 = 10_000;
/// `num_attention_heads`.
pub const MAX_HEADS: u64 = 1 << 16;
/// `head_dim`.
pub const MAX_HEAD_DIM: u64 = 1 << 16;
/// `intermediate_size`.
pub const MAX_INTERMEDIATE: u64 = 1 << 24;
/// `vocab_size`.
pub const MAX_VOCAB: u64 = 1 << 24;
/// Sequence length, context length and `max_position_embeddings` (2^30 tokens).
pub const MAX_SEQ: u64 = 1 << 30;
/// Routed experts per MoE layer.
pub const MAX_EXPERTS: u64 = 1 << 16;
/// Total parameters of a model (10^15).
pub const MAX_PARAMS: u64 = 1_000_000_000_000_000;
/// Micro-batch size and inference batch size.
pub const MAX_BATCH: u64 = 1 << 20;
/// Gradient accumulation steps.
pub const MAX_GRAD_ACCUM: u64 = 1 << 20;
/// GPUs in one job, and each parallel size.
pub const MAX_GPUS: u64 = 1 << 20;
/// Memory of one GPU in bytes (100 TB).
pub const MAX_GPU_MEMORY: u64 = 100_000_000_000_000;
/// CPU memory of one node in bytes (1 PB).
pub const MAX_CPU_MEMORY: u64 = 1_000_000_000_000_000;

/// Upper bound of an activation size (`resolve.rs` `activation_elems_bound`): 2^56 elements (2^57 bytes and more, far above
/// any GPU's or node's memory). The memory model's activation arithmetic is in `u64` and
/// multiplies such counts by bytes per element and small factors; under this bound every
/// product stays below 2^64 with 2^8 to spare. Found by the `estimate` fuzz target:
/// micro-batch 1 000 x a 2^30-token sequence under eager attention overflowed.
pub const MAX_ACTIVATION_ELEMS: u128 = 1 << 56;
