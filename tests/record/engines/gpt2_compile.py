"""GPT-2 built from a config (random weights; 4 layers, 1024 wide, 16 heads, vocabulary 32000,
fp16) under torch.compile(mode="reduce-overhead"): three calls at each batch size 16, 8, 4, 1
(sequence 256), an eager forward of the same model after each size. Its own readings, written as
JSON to OUT: the device's memory in use (cudaMemGetInfo) once the context is made and at the end,
and PyTorch's snapshot (each segment's address, size and pool) after each size and at the end.

Usage: gpt2_compile.py OUT"""
import json
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel

from readings import segments, used


readings = {"program": "gpt2_compile", "model": "GPT2LMHeadModel", "start": used(), "sizes": []}
torch.manual_seed(0)
config = GPT2Config(n_layer=4, n_embd=1024, n_head=16, vocab_size=32000, n_positions=256)
model = GPT2LMHeadModel(config).cuda().half().eval()
compiled = torch.compile(model, mode="reduce-overhead")
with torch.no_grad():
    for batch in (16, 8, 4, 1):
        ids = torch.randint(0, 32000, (batch, 256), device="cuda")
        for _ in range(3):
            compiled(ids)
        model(ids)
        torch.cuda.synchronize()
        readings["sizes"].append({"batch": batch, "used": used(), "segments": segments()})
readings["end"] = {"used": used(), "segments": segments()}
with open(sys.argv[1], "w") as f:
    json.dump(readings, f)
