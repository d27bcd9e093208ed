"""Record mode under real launchers: programs that start processes the way launchers
and frameworks do. Each CUDA process captures one small graph with memory nodes (PyTorch's
cudaMallocAsync backend) inside an NVTX range and replays it.

  launchers.py cuda NAME          one CUDA process (what the others start)
  launchers.py spawn              a parent without CUDA; two children by multiprocessing (spawn)
  launchers.py exec               a parent without CUDA; a child that execs a CUDA process
  launchers.py fork_helper        a CUDA parent forks a multiprocessing pool (fork), terminates it
  launchers.py sigint             a CUDA process interrupted by SIGINT (KeyboardInterrupt)
  launchers.py sigint_handled     replays a graph until SIGINT; catches KeyboardInterrupt,
                                  synchronizes and exits 7
  launchers.py sigterm_handled    replays a graph until SIGTERM, which its own handler catches;
                                  exits 9
  launchers.py until_signalled    replays a graph for up to 60 s, having said "ready" (for a
                                  signal sent from outside: SIGTERM ends it, the default action)
"""
import os
import signal
import subprocess
import sys

os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync")


def step_graph(name):
    """A small graph with memory nodes, captured inside the NVTX range NAME; with its output."""
    import torch
    x = torch.ones(4 << 20, device="cuda")
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    torch.cuda.nvtx.range_push(name)
    with torch.cuda.graph(g):
        y = (x * 2 + 1) * 3
    torch.cuda.nvtx.range_pop()
    return g, y


def cuda_step(name, replays=3):
    import torch
    g, y = step_graph(name)
    for _ in range(replays):
        g.replay()
    torch.cuda.synchronize()
    return float(y[0].item())


def replay_until_signal(sig, code):
    """Replays a graph; the process sends itself SIG after 200 replays, whose handler (Python's
    KeyboardInterrupt for SIGINT, its own for SIGTERM) stops the loop. Returns CODE."""
    import torch
    stop = []
    if sig != signal.SIGINT:
        signal.signal(sig, lambda *_: stop.append(True))
    g, y = step_graph("replayed until a signal")
    replays = 0
    try:
        while not stop:
            g.replay()
            replays += 1
            if replays == 200:
                os.kill(os.getpid(), sig)
    except KeyboardInterrupt:
        pass
    torch.cuda.synchronize()
    print(f"stopped by {signal.Signals(sig).name} after {replays} replays, y[0] = {float(y[0].item())}")
    return code


def child(i):
    return cuda_step("child %d" % i)


def cpu_work(n):
    return sum(range(n))


def main():
    mode = sys.argv[1]
    if mode == "cuda":
        print("cuda", sys.argv[2], cuda_step(sys.argv[2]))
    elif mode == "spawn":
        import multiprocessing as mp
        with mp.get_context("spawn").Pool(2) as pool:
            print("spawn children:", pool.map(child, [0, 1]))
    elif mode == "exec":
        code = subprocess.call([sys.executable, __file__, "exec-child"])
        print("exec child exited", code)
        sys.exit(code)
    elif mode == "exec-child":
        os.execv(sys.executable, [sys.executable, __file__, "cuda", "exec child"])
    elif mode == "fork_helper":
        import multiprocessing as mp
        before = cuda_step("fork parent")
        pool = mp.get_context("fork").Pool(2)
        print("helpers:", pool.map(cpu_work, [1000, 2000]))
        pool.terminate()
        pool.join()
        print("fork parent", before, cuda_step("fork parent again", replays=2))
    elif mode == "sigint":
        cuda_step("interrupted")
        os.kill(os.getpid(), signal.SIGINT)
        import time
        time.sleep(5)  # KeyboardInterrupt arrives here
        print("not reached")
    elif mode == "sigint_handled":
        sys.exit(replay_until_signal(signal.SIGINT, 7))
    elif mode == "sigterm_handled":
        sys.exit(replay_until_signal(signal.SIGTERM, 9))
    elif mode == "until_signalled":
        import time
        g, _ = step_graph("until signalled")
        print("ready", flush=True)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            g.replay()
        print("not signalled")
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
