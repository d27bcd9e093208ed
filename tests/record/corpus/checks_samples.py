"""Checks of NVIDIA's cuda-samples graph programs under `gmemprof record` against what each
prints. check(name, args, stdout_unrecorded, stdout_recorded, report) -> [(ok, detail)]."""
import re

MIB = 1 << 20


def _collapse(values):
    out = []
    for v in values:
        if not out or out[-1] != v:
            out.append(v)
    return out


def check(name, args, plain, recorded, report):
    out = []
    rec = report.get("recorded") or {}
    graphs = rec.get("graphs", [])
    if name == "graphMemoryFootprint":
        # Each FOOTPRINT is cudaGraphMemAttrUsedMemCurrent, read right after a launch, a trim or a
        # free; the recording reads the counters after every call that can map or unmap memory.
        printed = [int(x) for x in re.findall(r"FOOTPRINT: (\d+) bytes", recorded)]
        timeline = [p["used_current"] for p in sorted(rec.get("timeline", []), key=lambda p: p["t_us"]) if p.get("device", 0) == 0]
        a, b = _collapse(printed), _collapse(timeline)
        # The recording's first readings precede the sample's first print (its instantiations).
        while b and a and b[0] != a[0]:
            b = b[1:]
        out.append((len(printed) == 34, f"the sample printed {len(printed)} FOOTPRINT lines"))
        out.append((a == b, "every FOOTPRINT the sample printed is the recorded timeline's used memory at that point "
                            f"(in order, repeats collapsed): printed {[x // MIB for x in a]} MiB, recorded {[x // MIB for x in b]} MiB"))
        pools = rec.get("pools", [])
        out.append((bool(pools) and pools[0].get("high_bytes") == max((p["reserved_high"] for p in rec.get("timeline", [])), default=0),
                    "the pool's high watermark is the timeline's highest reading"))
        out.append((len(graphs) >= 1, f"{len(graphs)} graph record(s)"))
    elif name == "graphMemoryNodes":
        out.append((recorded.count("Validation PASSED!") == 6, f"{recorded.count('Validation PASSED!')} validations passed recorded"))
        out.append((len(graphs) >= 3, f"{len(graphs)} graphs with memory nodes recorded (a capture and explicit graphs)"))
    else:
        out.append((True, f"{len(graphs)} graph record(s), {rec.get('graphs_without_memory_nodes', 0)} graph(s) without memory nodes"))
    # A remap is one where the pool model says another graph's allocation took the memory; a
    # growth inside a relaunch the model cannot explain is a disagreement with the driver.
    unexplained = sum(1 for g in graphs for e in g.get("events", []) if e.get("class") == "remap_unexplained")
    out.append((unexplained == 0, f"{unexplained} relaunch(es) the pool model does not explain"))
    return out
