"""A Hugging Face Llama built from a config (random weights; 2 layers, 512 wide, 8 heads,
vocabulary 32000, fp16) generating 12 tokens with cache_implementation="static", which
transformers compiles (CUDA graph trees), at batch 1 then 2. Its own readings, written as JSON to
OUT: the device's memory in use (cudaMemGetInfo) once the context is made and at the end, and
PyTorch's snapshot (each segment's address, size and pool) after each batch size and at the end.

Usage: hf_generate.py OUT"""
import json
import sys

import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM

from readings import segments, used


readings = {"program": "hf_generate", "model": "LlamaForCausalLM", "transformers": transformers.__version__,
            "start": used(), "sizes": []}
torch.manual_seed(0)
config = LlamaConfig(hidden_size=512, intermediate_size=1376, num_hidden_layers=2, num_attention_heads=8,
                     num_key_value_heads=8, vocab_size=32000, max_position_embeddings=512)
model = LlamaForCausalLM(config).cuda().half().eval()
for batch in (1, 2):
    ids = torch.randint(0, 32000, (batch, 24), device="cuda")
    model.generate(ids, max_new_tokens=12, do_sample=False, cache_implementation="static")
    torch.cuda.synchronize()
    readings["sizes"].append({"batch": batch, "used": used(), "segments": segments()})
readings["end"] = {"used": used(), "segments": segments()}
with open(sys.argv[1], "w") as f:
    json.dump(readings, f)
