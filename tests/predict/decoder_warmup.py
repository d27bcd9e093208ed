"""A CUDA graph warm-up of a decoder model with random weights, every batch size captured largest
first into one shared pool, each size's inputs a slice of one buffer made before any capture
(engines keep persistent input buffers), each graph replayed once after its capture.

- style vllm: piecewise graphs (the model split at attention, which runs eagerly between the
  pieces, as vLLM's piecewise graphs do), each piece's output released once the next piece has
  read it (vLLM keeps weak references to them), so that later captures reuse what earlier ones
  freed;
- style sglang: one graph per batch size, the whole forward (attention on the KV cache included),
  as SGLang's CudaGraphRunner captures it;
- style vllm-aux: vllm's, each layer also running a shared expert on a side stream inside the
  capture (as vLLM's MoE layers run theirs), whose allocations PyTorch keeps apart from the
  capture stream's in the same graph pool.

    decoder_warmup.py full   --sizes vllm|sglang|all|LIST [--style vllm|sglang|vllm-aux] --out MEASURED.json
    decoder_warmup.py sample --sizes vllm|sglang|all|LIST [--style vllm|sglang|vllm-aux] --sample N --out SAMPLE.json

`full` captures every size and writes the bill it measured itself (gmem.predict.device_reading:
PyTorch's graph pools, the memory-node pool, cuMemGetInfo), in total and for each graph
(gmem.predict.graph_meter). `sample` captures N of the sizes
through gmem.predict.sample and writes the sample that `gmemprof predict` reads. Under torchrun
with two or more ranks each rank all-reduces its activations after every layer inside the
graphs (tensor-parallel style, NCCL captured), on its own device, and writes OUT with .rankR.
vllm: 1, 2, 4, then 8 to 512 by 8 (67 sizes, vLLM's default capture sizes); sglang: 1, 2, 4, 8,
then 16 to 256 by 8 (35 sizes, SGLang's default on a GPU of more than 90 GiB); all: 1 to 512."""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "python"))
import gmem.predict  # noqa: E402


def capture_sizes(spec):
    if spec == "vllm":
        return [1, 2, 4] + list(range(8, 513, 8))
    if spec == "sglang":
        return sorted(set([1, 2, 4, 8] + list(range(16, 161, 8)) + list(range(160, 257, 8))))
    if spec == "all":
        return list(range(1, 513))
    return [int(s) for s in spec.split(",")]


class Layer(torch.nn.Module):
    def __init__(self, hidden, heads, ffn, aux=None):
        super().__init__()
        self.heads = heads
        self.aux = aux  # the side stream of a shared expert, or None
        self.shared = torch.nn.Linear(hidden, hidden, bias=False) if aux is not None else None
        self.norm1 = torch.nn.RMSNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden, bias=False)
        self.out = torch.nn.Linear(hidden, hidden, bias=False)
        self.norm2 = torch.nn.RMSNorm(hidden)
        self.up = torch.nn.Linear(hidden, 2 * ffn, bias=False)
        self.down = torch.nn.Linear(ffn, hidden, bias=False)

    def before_attention(self, h):
        return self.qkv(self.norm1(h))

    def after_attention(self, h, attn):
        h = h + self.out(attn)
        if self.aux is None:
            gate, up = self.up(self.norm2(h)).chunk(2, dim=-1)
            return h + self.down(torch.nn.functional.silu(gate) * up)
        # The shared expert's output is made on the capture stream and filled on the side stream,
        # whose own allocations are all freed there before the capture stream waits for it: with
        # cudaMallocAsync a free is stream work, and a side stream's after the join is unjoined.
        main = torch.cuda.current_stream()
        shared = torch.empty_like(h)
        self.aux.wait_stream(main)
        with torch.cuda.stream(self.aux):
            y = torch.nn.functional.silu(self.shared(self.norm2(h)))
            shared.copy_(y)
            del y
        gate, up = self.up(self.norm2(h)).chunk(2, dim=-1)
        routed = self.down(torch.nn.functional.silu(gate) * up)
        main.wait_stream(self.aux)
        return h + routed + shared


class Decoder(torch.nn.Module):
    """Embedding, layers, final norm and head; attention over a fixed context (a KV cache)."""

    def __init__(self, vocab=8192, hidden=2048, heads=16, ffn=5632, layers=4, context=256, world=1, aux=False):
        super().__init__()
        self.world = world
        self.embed = torch.nn.Embedding(vocab, hidden)
        self.aux_stream = torch.cuda.Stream() if aux else None  # one, kept, as engines keep theirs
        self.layers = torch.nn.ModuleList(Layer(hidden, heads, ffn, self.aux_stream) for _ in range(layers))
        self.norm = torch.nn.RMSNorm(hidden)
        self.head = torch.nn.Linear(hidden, vocab, bias=False)
        self.heads, self.hidden = heads, hidden
        self.register_buffer("k_cache", torch.randn(heads, context, hidden // heads))
        self.register_buffer("v_cache", torch.randn(heads, context, hidden // heads))

    def attention(self, qkv):
        """Eager, outside every graph: the tokens' queries against the cache."""
        b = qkv.shape[0]
        q = qkv[:, : self.hidden].view(b, self.heads, -1).transpose(0, 1)
        w = torch.softmax(q @ self.k_cache.transpose(1, 2) / 8.0, dim=-1)
        return (w @ self.v_cache).transpose(0, 1).reshape(b, self.hidden)

    def pieces(self):
        """The piecewise split: piece k runs layer k-1 after its attention and layer k before it."""
        n = len(self.layers)
        def first(x):
            h = self.embed(x)
            return h, self.layers[0].before_attention(h)
        out = [first]
        for k in range(1, n + 1):
            def piece(args, k=k):
                h, attn = args
                h = self.layers[k - 1].after_attention(h, attn)
                if self.world > 1:
                    torch.distributed.all_reduce(h)
                if k < n:
                    return h, self.layers[k].before_attention(h)
                return self.head(self.norm(h)), None
            out.append(piece)
        return out


class Runner:
    """The captured graphs of every batch size, in one shared pool, their inputs slices of one
    buffer of the largest size."""

    def __init__(self, model, largest, style="vllm"):
        self.model = model
        self.style = style
        self.pool = torch.cuda.graph_pool_handle()
        self.input_ids = torch.randint(0, 8192, (largest,), device="cuda")
        self.graphs = {}
        self.outputs = {}

    def capture(self, size):
        x = self.input_ids[:size]
        with torch.no_grad():
            graphs = self._whole(x) if self.style == "sglang" else self._pieces(x)
        self.graphs[size] = graphs
        return len(graphs)

    def _whole(self, x):
        m = self.model
        pieces = m.pieces()

        def forward(x):
            state = pieces[0](x)
            for piece in pieces[1:]:
                state = piece((state[0], m.attention(state[1])))
            return state[0]
        forward(x)  # one eager run first, as engines warm up each size before capturing it
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=self.pool):
            out = forward(x)
        g.replay()
        self.outputs[x.shape[0]] = out
        return [g]

    def _pieces(self, x):
        m = self.model
        pieces = m.pieces()
        # One eager run first, as engines warm up each size before capturing it.
        state = pieces[0](x)
        for piece in pieces[1:]:
            state = piece((state[0], m.attention(state[1])))
        torch.cuda.synchronize()
        state = None
        carried = x
        graphs = []
        for k, piece in enumerate(pieces):
            g = torch.cuda.CUDAGraph()
            arg = carried if k == 0 else (carried[0], m.attention(carried[1]))
            with torch.cuda.graph(g, pool=self.pool):
                out = piece(arg)
            # Replayed once before the eager attention reads its output: with cudaMallocAsync
            # a captured allocation is a memory node, mapped only when its graph runs.
            g.replay()
            graphs.append(g)
            # The previous piece's output is released once this piece has read it.
            carried = out
        self.outputs[x.shape[0]] = carried[0]
        return graphs


def build(world, aux=False):
    torch.manual_seed(0)
    torch.set_default_dtype(torch.float16)
    model = Decoder(world=world, aux=aux).cuda().eval()
    if world > 1:  # the communicator made and warmed up before any capture
        torch.distributed.all_reduce(torch.ones(1, device="cuda"))
        torch.cuda.synchronize()
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["full", "sample"])
    ap.add_argument("--sizes", default="vllm")
    ap.add_argument("--sample", type=int, default=4)
    ap.add_argument("--style", choices=["vllm", "sglang", "vllm-aux"], default="vllm")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    sizes = sorted(capture_sizes(a.sizes), reverse=True)  # largest first
    world = int(os.environ.get("WORLD_SIZE", "1"))
    device = 0
    if world > 1:
        device = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(device)
        torch.distributed.init_process_group("nccl", device_id=torch.device("cuda", device))
        root, ext = os.path.splitext(a.out)
        a.out = "%s.rank%d%s" % (root, torch.distributed.get_rank(), ext)
    model = build(world, aux=a.style == "vllm-aux")
    runner = Runner(model, sizes[0], a.style)
    torch.cuda.synchronize()
    started = time.time()
    if a.mode == "full":
        before = gmem.predict.device_reading(device)
        with gmem.predict.graph_meter(device) as meter:
            graphs = sum(runner.capture(s) for s in sizes)
        torch.cuda.synchronize()
        after = gmem.predict.device_reading(device)
        result = {"sizes": sizes, "graphs": graphs, "before": before, "after": after,
                  "each_graph": gmem.predict.measured_graphs(meter.readings),
                  "allocator": gmem.predict.torch_allocator(), "seconds": time.time() - started}
    else:
        picked = gmem.predict.pick_sizes(sizes, a.sample)
        sample = gmem.predict.sample(runner.capture, picked, device=device)
        sample["capture_order"] = sizes
        result = sample
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, a.out)
    print("decoder_warmup %s: %d sizes, %.1f s" % (a.mode, len(sizes), time.time() - started))
    if world > 1:
        # Both ranks done before either leaves; the process group is not destroyed while the
        # graphs that captured its collectives are alive.
        torch.distributed.barrier()


if __name__ == "__main__":
    main()
