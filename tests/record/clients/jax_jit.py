"""Record mode's corpus, JAX: a jitted function run ten times (XLA may run its kernels as CUDA
graphs of its own, command buffers, which allocate no graph memory). The recording must leave the
program's output and exit as they are and write its report.

Usage: jax_jit.py SELF_JSON
SELF_JSON: {"runs", "result", "backend"}. stdout: one line."""
import json
import os
import sys

# XLA times candidate kernels to choose one (autotuning), and candidates round differently: the
# result would depend on the timings. Without it, a run's output is the same every time.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_gpu_autotune_level=0").strip()

try:
    import jax
    import jax.numpy as jnp
except ImportError:
    print("SKIP: JAX is not installed")
    sys.exit(0)


@jax.jit
def step(x):
    y = jnp.tanh(x @ x.T) * 0.5
    return (y + jnp.sin(y)).sum()


x = jnp.ones((256, 256), dtype=jnp.float32) * 0.01
runs = 10
for _ in range(runs):
    r = step(x).block_until_ready()
doc = {"runs": runs, "result": float(r), "backend": jax.default_backend()}
with open(sys.argv[1], "w") as f:
    json.dump(doc, f)
print(f"jax: {runs} runs on {doc['backend']}, result {doc['result']:.3f}")
