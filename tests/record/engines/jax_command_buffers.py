"""A JAX program whose XLA command buffers are CUDA graphs (--xla_gpu_enable_command_buffer), run
with new input buffers each step so that XLA updates its executable graphs in place rather than
instantiating new ones. It reads the device's memory in use itself (cudaMemGetInfo, through
cuda-python) before JAX's first allocation and after its steps, and writes them to SELF_JSON:
{"jax", "xla_flags", "steps", "used_before", "used_after", "result"}.

Usage: jax_command_buffers.py SELF_JSON [--steps N]"""
import argparse
import json
import os

ap = argparse.ArgumentParser()
ap.add_argument("self_json")
ap.add_argument("--steps", type=int, default=20)
a = ap.parse_args()

# Command buffers for fusions and library calls, from the smallest graph up; no preallocation,
# so that the device's memory in use moves with what XLA allocates.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL"
                           " --xla_gpu_graph_min_graph_size=1").strip()
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def used():
    """The device's memory in use (cudaMemGetInfo), through the runtime's primary context, XLA's."""
    try:
        from cuda.bindings import runtime as cudart
    except ImportError:
        from cuda import cudart
    err, free, total = cudart.cudaMemGetInfo()
    if int(err) != 0:
        raise RuntimeError(f"cudaMemGetInfo: {err}")
    return total - free


before = used()
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402


@jax.jit
def step(x, w1, w2):
    h = jnp.tanh(x @ w1)
    return jnp.sum(jax.nn.relu(h @ w2) * 0.5 + h.mean())


key = jax.random.PRNGKey(0)
k1, k2, k3 = jax.random.split(key, 3)
w1 = jax.random.normal(k1, (512, 1024), jnp.float32)
w2 = jax.random.normal(k2, (1024, 512), jnp.float32)
total = 0.0
for i in range(a.steps):
    # A new input array each step: its buffer's address changes, and the command buffer with it.
    x = jax.random.normal(jax.random.fold_in(k3, i), (256, 512), jnp.float32)
    total += float(step(x, w1, w2))
after = used()
json.dump({"jax": jax.__version__, "xla_flags": os.environ["XLA_FLAGS"], "steps": a.steps,
           "used_before": before, "used_after": after, "result": total}, open(a.self_json, "w"))
print(f"jax {jax.__version__}: {a.steps} steps, device memory in use +{(after - before) / 2**20:.1f} MiB")
