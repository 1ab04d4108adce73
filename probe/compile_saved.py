# What torch.compile keeps for backward: the forward graph outputs (saved tensors) of one
# Llama decoder layer under AOTAutograd with the min-cut partitioner (what inductor uses)
# against the default partition (eager-like). CPU, real tensors, a small layer. Not in CI;
# the first look at issue 14 item 2 (`compile`), not yet a model input.
import torch, functools, sys
from torch._subclasses.fake_tensor import FakeTensorMode
from torch._functorch.aot_autograd import aot_module_simplified
from torch._functorch.partitioners import min_cut_rematerialization_partition, default_partition
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

saved = {}
def fw_compiler(gm, example_inputs, tag):
    # forward graph outputs = user outputs + saved tensors
    out = [n for n in gm.graph.nodes if n.op == "output"][0]
    vals = out.args[0]
    tot = 0; items=[]
    for v in vals:
        if hasattr(v, "meta") and "val" in v.meta and isinstance(v.meta["val"], torch.Tensor):
            t = v.meta["val"]; b = t.numel()*t.element_size(); tot += b; items.append((v.name, tuple(t.shape), str(t.dtype), b))
    saved[tag] = (tot, items)
    return gm.forward
def bw_compiler(gm, example_inputs):
    return gm.forward

def backend(tag, partition):
    def b(gm, example_inputs):
        return aot_module_simplified(gm, example_inputs, fw_compiler=functools.partial(fw_compiler, tag=tag), bw_compiler=bw_compiler, partition_fn=partition)
    return b

cfg = LlamaConfig(hidden_size=512, intermediate_size=1536, num_attention_heads=8, num_key_value_heads=2, num_hidden_layers=1, vocab_size=1000)
cfg._attn_implementation = "sdpa"
torch.manual_seed(0)
layer = LlamaDecoderLayer(cfg, 0).to(torch.bfloat16)
rope = LlamaRotaryEmbedding(cfg)
b, s = 2, 256
x = torch.randn(b, s, cfg.hidden_size, dtype=torch.bfloat16, requires_grad=True)
pos = torch.arange(s)[None]
cos, sin = rope(x, pos)
def f(x, cos, sin):
    return layer(x, position_embeddings=(cos, sin), attention_mask=None)
for tag, part in [("mincut", min_cut_rematerialization_partition), ("default", default_partition)]:
    torch._dynamo.reset()
    g = torch.compile(f, backend=backend(tag, part), fullgraph=False)
    y = g(x, cos, sin)
    y = y[0] if isinstance(y, tuple) else y
    tot, items = saved[tag]
    print(tag, tot, "bytes; per token-hidden:", tot / (b*s*cfg.hidden_size*2))
    for it in items: print("   ", it)
