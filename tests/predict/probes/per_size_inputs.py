"""The vLLM-style warm-up as it was before its inputs were slices of one buffer: each size's input
a new tensor, kept to the end. With cudaMallocAsync such tensors can each hold a chunk of the
pool that torch.cuda.empty_cache cannot release (docs/driver-facts.md)."""
import torch

import decoder_warmup as dw


class PerSizeInputs(dw.Runner):
    """Each size's input a new tensor, kept to the end (not a slice of one buffer)."""

    def __init__(self, model):
        super().__init__(model, 1)
        self.kept = []

    def capture(self, size):
        self.input_ids = torch.randint(0, 8192, (size,), device="cuda")
        self.kept.append(self.input_ids)
        return super().capture(size)
