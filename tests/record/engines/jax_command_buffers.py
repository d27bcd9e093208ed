"""A JAX program whose XLA command buffers are CUDA graphs (--xla_gpu_enable_command_buffer), run
with new input buffers each step so that XLA updates its executable graphs in place rather than
instantiating new ones. It reads, through cuda-python, the device's memory in use itself
(cudaMemGetInfo) before JAX's first allocation, after its first step and after its last (the
window after JAX's initialisation), and the device's four graph memory counters
(cudaDeviceGetGraphMemAttribute) after every step, and writes them to SELF_JSON:
{"jax", "xla_flags", "steps", "device", "used_before", "used_after_step1", "used_after", "result",
 "graph_memory": [{"step", "used_current", "used_high", "reserved_current", "reserved_high"}, ...]}
(used_after: after the last step). tests/record/engines/check_jax.py compares a recording of it
with them.

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

try:
    from cuda.bindings import runtime as cudart
except ImportError:
    from cuda import cudart

DEVICE = 0  # JAX's default device, the one XLA's command buffers run on
GRAPH_MEMORY = (("used_current", cudart.cudaGraphMemAttributeType.cudaGraphMemAttrUsedMemCurrent),
                ("used_high", cudart.cudaGraphMemAttributeType.cudaGraphMemAttrUsedMemHigh),
                ("reserved_current", cudart.cudaGraphMemAttributeType.cudaGraphMemAttrReservedMemCurrent),
                ("reserved_high", cudart.cudaGraphMemAttributeType.cudaGraphMemAttrReservedMemHigh))


def checked(name, result):
    """The values of a cuda-python call's result, raising where its error is not cudaSuccess."""
    err, *values = result
    if int(err) != 0:
        raise RuntimeError(f"{name}: {err}")
    return values


def used():
    """The device's memory in use (cudaMemGetInfo), through the runtime's primary context, XLA's."""
    free, total = checked("cudaMemGetInfo", cudart.cudaMemGetInfo())
    return total - free


def graph_memory(step):
    """The device's graph memory counters now (cudaDeviceGetGraphMemAttribute), in bytes."""
    out = {"step": step}
    for name, attr in GRAPH_MEMORY:
        (value,) = checked(f"cudaDeviceGetGraphMemAttribute({name})", cudart.cudaDeviceGetGraphMemAttribute(DEVICE, attr))
        out[name] = int(value)
    return out


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
counters = []
after_step1 = None
for i in range(a.steps):
    # A new input array each step: its buffer's address changes, and the command buffer with it.
    x = jax.random.normal(jax.random.fold_in(k3, i), (256, 512), jnp.float32)
    total += float(step(x, w1, w2))  # float() waits for the step's result
    counters.append(graph_memory(i + 1))
    if i == 0:
        after_step1 = used()
after = used()
json.dump({"jax": jax.__version__, "xla_flags": os.environ["XLA_FLAGS"], "steps": a.steps, "device": DEVICE,
           "used_before": before, "used_after_step1": after_step1, "used_after": after, "result": total,
           "graph_memory": counters}, open(a.self_json, "w"))
high = max(c["reserved_high"] for c in counters)
print(f"jax {jax.__version__}: {a.steps} steps, device memory in use +{(after - before) / 2**20:.1f} MiB "
      f"(+{(after - after_step1) / 2**20:.1f} MiB after step 1), graph memory reserved high {high / 2**20:.1f} MiB")
