"""What an engine program reads itself (gpt2_compile.py, hf_generate.py): the device's memory in
use (cudaMemGetInfo) and PyTorch's snapshot segments (address, size, pool)."""
import torch


def used():
    free, total = torch.cuda.mem_get_info()
    return total - free


def segments():
    return [{"address": g["address"], "size": g["total_size"], "pool": str(tuple(g["segment_pool_id"]))}
            for g in torch.cuda.memory._snapshot()["segments"]]
