// Measures what decides physical-memory reuse between a CUDA graph's memory nodes on the driver
// at hand: creation order, dependencies given when an alloc node is created versus edges added
// later, sizes, stream capture, child graphs, graphs sharing a stream, AutoFreeOnLaunch, upload.
// Prints one table row per case (reserved high after the first launch, distinct addresses).
// Build: nvcc -std=c++17 -O2 -arch=sm_90 -cudart static tools/reuse_probe.cu -o reuse_probe
//
// `reuse_probe --layout [--device N] 'NAME: SPEC' ...` builds one graph per SPEC instead and
// prints, after one launch, the reservation and where each allocation was placed (its offset
// from the lowest address of the case, in MiB). SPEC is a list of nodes in creation order:
//   aK=SIZE[<DEP,DEP]  alloc node K of SIZE (in units of S = 64 MiB, or "32m" for MiB)
//   fK[<DEP,...]       free node of allocation K
//   eK[<DEP,...]       empty node K
// with the dependencies given at creation (names of earlier nodes). Example, the 1,2,3,4 S chain:
//   'H: a0=1 f0<a0 a1=2<f0 f1<a1 a2=3<f1 f2<a2 a3=4<f2 f3<a3'
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

bool ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::printf("  ! %s: %s\n", what, cudaGetErrorString(e));
    cudaGetLastError();
    return false;
  }
  return true;
}
#define CK(x) ok((x), #x)

constexpr std::size_t MiB = std::size_t{1} << 20;
const std::size_t S = 64 * MiB;
int dev = 0;

cudaGraphNode_t add_alloc(cudaGraph_t g, std::vector<cudaGraphNode_t> deps, std::size_t bytes,
                          void** ptr) {
  cudaMemAllocNodeParams p{};
  p.poolProps.allocType = cudaMemAllocationTypePinned;
  p.poolProps.location.type = cudaMemLocationTypeDevice;
  p.poolProps.location.id = dev;
  p.bytesize = bytes;
  cudaGraphNode_t n = nullptr;
  CK(cudaGraphAddMemAllocNode(&n, g, deps.data(), deps.size(), &p));
  *ptr = p.dptr;
  return n;
}
cudaGraphNode_t add_free(cudaGraph_t g, std::vector<cudaGraphNode_t> deps, void* ptr) {
  cudaGraphNode_t n = nullptr;
  CK(cudaGraphAddMemFreeNode(&n, g, deps.data(), deps.size(), ptr));
  return n;
}
cudaGraphNode_t add_empty(cudaGraph_t g, std::vector<cudaGraphNode_t> deps) {
  cudaGraphNode_t n = nullptr;
  CK(cudaGraphAddEmptyNode(&n, g, deps.data(), deps.size()));
  return n;
}
void add_edge(cudaGraph_t g, cudaGraphNode_t a, cudaGraphNode_t b) {
  CK(cudaGraphAddDependencies(g, &a, &b, nullptr, 1));
}

std::uint64_t attr(cudaGraphMemAttributeType t) {
  std::uint64_t v = 0;
  CK(cudaDeviceGetGraphMemAttribute(dev, t, &v));
  return v;
}
void reset_pool() {
  CK(cudaDeviceSynchronize());
  CK(cudaDeviceGraphMemTrim(dev));
  std::uint64_t z = 0;
  CK(cudaDeviceSetGraphMemAttribute(dev, cudaGraphMemAttrReservedMemHigh, &z));
  CK(cudaDeviceSetGraphMemAttribute(dev, cudaGraphMemAttrUsedMemHigh, &z));
}

struct result {
  std::size_t vas = 0;         // distinct alloc addresses
  std::size_t allocs = 0;
  std::uint64_t after_upload = 0;  // reserved high after upload (if upload used)
  std::uint64_t reserved = 0;  // reserved high after launches
  std::uint64_t used = 0;
  double first_ms = 0;
  std::string note;
};

std::set<void*> g_ptrs;
std::size_t g_allocs = 0;
void* track(void* p) { g_ptrs.insert(p); ++g_allocs; return p; }

// Instantiates, (optionally uploads), launches `launches` times, reads the counters.
result measure(cudaGraph_t g, unsigned long long flags = 0, int launches = 1, bool upload = false) {
  result r;
  cudaGraphExec_t e = nullptr;
  cudaStream_t s = nullptr;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  if (!CK(cudaGraphInstantiateWithFlags(&e, g, flags))) { r.note = "instantiate failed"; return r; }
  if (upload) { CK(cudaGraphUpload(e, s)); CK(cudaStreamSynchronize(s)); r.after_upload = attr(cudaGraphMemAttrReservedMemHigh); }
  auto t0 = std::chrono::steady_clock::now();
  CK(cudaGraphLaunch(e, s));
  CK(cudaStreamSynchronize(s));
  r.first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (int i = 1; i < launches; ++i) CK(cudaGraphLaunch(e, s));
  CK(cudaStreamSynchronize(s));
  r.reserved = attr(cudaGraphMemAttrReservedMemHigh);
  r.used = attr(cudaGraphMemAttrUsedMemHigh);
  CK(cudaGraphExecDestroy(e));
  CK(cudaStreamDestroy(s));
  return r;
}

void print(const char* name, const char* expect, result r) {
  std::printf("%-34s | %5zu/%-5zu | %9.1f | %9.1f | %9.1f | %8.3f | %-28s %s\n", name, r.vas, r.allocs,
              r.after_upload / double(MiB), r.reserved / double(MiB), r.used / double(MiB),
              r.first_ms, expect, r.note.c_str());
  std::fflush(stdout);
}

using builder = std::function<result()>;

void run_case(const char* name, const char* expect, const builder& b) {
  reset_pool();
  g_ptrs.clear();
  g_allocs = 0;
  result r = b();
  r.vas = g_ptrs.size();
  r.allocs = g_allocs;
  print(name, expect, r);
  reset_pool();
}

// Four chains alloc->empty->free of the given sizes; mode: 0 no cross deps (interleaved creation),
// 1 all allocs created first, 2 free_i given as a dependency when alloc_{i+1} is created,
// 3 like 0 plus edges free_i -> alloc_{i+1} added afterwards, 4 like 3 then cudaGraphClone,
// 5 via an empty node given at creation, 6 via an empty node whose in-edge is added later.
result chains(std::vector<std::size_t> sizes, int mode) {
  cudaGraph_t g = nullptr;
  CK(cudaGraphCreate(&g, 0));
  std::size_t n = sizes.size();
  std::vector<cudaGraphNode_t> a(n), f(n), mid(n), join(n);
  std::vector<void*> p(n);
  if (mode == 1) {
    for (std::size_t i = 0; i < n; ++i) { a[i] = add_alloc(g, {}, sizes[i], &p[i]); track(p[i]); }
    for (std::size_t i = 0; i < n; ++i) { mid[i] = add_empty(g, {a[i]}); f[i] = add_free(g, {mid[i]}, p[i]); }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<cudaGraphNode_t> deps;
      if (i > 0 && mode == 2) deps = {f[i - 1]};
      if (i > 0 && mode == 5) deps = {add_empty(g, {f[i - 1]})};
      if (i > 0 && mode == 6) { join[i] = add_empty(g, {}); deps = {join[i]}; }
      a[i] = add_alloc(g, deps, sizes[i], &p[i]);
      track(p[i]);
      mid[i] = add_empty(g, {a[i]});
      f[i] = add_free(g, {mid[i]}, p[i]);
    }
  }
  if (mode == 3 || mode == 4)
    for (std::size_t i = 1; i < n; ++i) add_edge(g, f[i - 1], a[i]);
  if (mode == 6)
    for (std::size_t i = 1; i < n; ++i) add_edge(g, f[i - 1], join[i]);
  result r;
  if (mode == 4) {
    cudaGraph_t c = nullptr;
    CK(cudaGraphClone(&c, g));
    // addresses in the clone
    std::size_t cnt = 0;
    CK(cudaGraphGetNodes(c, nullptr, &cnt));
    std::vector<cudaGraphNode_t> nodes(cnt);
    CK(cudaGraphGetNodes(c, nodes.data(), &cnt));
    std::set<void*> cl;
    for (auto nd : nodes) {
      cudaGraphNodeType t;
      CK(cudaGraphNodeGetType(nd, &t));
      if (t == cudaGraphNodeTypeMemAlloc) { cudaMemAllocNodeParams q{}; CK(cudaGraphMemAllocNodeGetParams(nd, &q)); cl.insert(q.dptr); }
    }
    r = measure(c);
    r.note = "clone distinct VAs " + std::to_string(cl.size());
    CK(cudaGraphDestroy(c));
  } else {
    r = measure(g);
  }
  CK(cudaGraphDestroy(g));
  return r;
}

std::string same(void* x, void* y) { return x == y ? "same" : "diff"; }

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// One --layout case: builds the graph SPEC describes, launches it once, prints the reservation
// and each allocation's offset. Returns false on a malformed SPEC.
bool layout_case(const std::string& arg) {
  const std::size_t colon = arg.find(':');
  const std::string name = colon == std::string::npos ? arg : arg.substr(0, colon);
  const std::string spec = colon == std::string::npos ? arg : arg.substr(colon + 1);
  reset_pool();
  cudaGraph_t g = nullptr;
  CK(cudaGraphCreate(&g, 0));
  std::vector<std::pair<std::string, cudaGraphNode_t>> nodes;
  std::vector<std::pair<std::string, std::pair<void*, std::size_t>>> allocs;
  const auto find_node = [&](const std::string& n) -> cudaGraphNode_t {
    for (const auto& [k, v] : nodes)
      if (k == n) return v;
    return nullptr;
  };
  for (const std::string& tok : split(spec, ' ')) {
    const std::size_t lt = tok.find('<');
    const std::string head = tok.substr(0, lt);
    std::vector<cudaGraphNode_t> deps;
    if (lt != std::string::npos)
      for (const std::string& d : split(tok.substr(lt + 1), ',')) {
        cudaGraphNode_t n = find_node(d);
        if (!n) { std::printf("%s: unknown dependency %s in %s\n", name.c_str(), d.c_str(), tok.c_str()); return false; }
        deps.push_back(n);
      }
    const std::size_t eq = head.find('=');
    const std::string id = head.substr(0, eq);
    if (id.size() < 2) { std::printf("%s: bad node %s\n", name.c_str(), tok.c_str()); return false; }
    if (id[0] == 'a' && eq != std::string::npos) {
      const std::string size = head.substr(eq + 1);
      const std::size_t bytes = size.back() == 'm' ? std::stoul(size) * MiB : static_cast<std::size_t>(std::stod(size) * S);
      void* p = nullptr;
      nodes.emplace_back(id, add_alloc(g, deps, bytes, &p));
      allocs.push_back({id, {p, bytes}});
    } else if (id[0] == 'f') {
      void* p = nullptr;
      for (const auto& [k, v] : allocs)
        if (k == "a" + id.substr(1)) p = v.first;
      if (!p) { std::printf("%s: %s frees no earlier allocation\n", name.c_str(), tok.c_str()); return false; }
      nodes.emplace_back(id, add_free(g, deps, p));
    } else if (id[0] == 'e') {
      nodes.emplace_back(id, add_empty(g, deps));
    } else {
      std::printf("%s: bad node %s\n", name.c_str(), tok.c_str());
      return false;
    }
  }
  const result r = measure(g);
  CK(cudaGraphDestroy(g));
  std::uintptr_t low = ~std::uintptr_t{0};
  for (const auto& [k, v] : allocs) low = std::min(low, reinterpret_cast<std::uintptr_t>(v.first));
  std::printf("%s | reserved %.1f MiB | used %.1f MiB |", name.c_str(), r.reserved / double(MiB), r.used / double(MiB));
  for (const auto& [k, v] : allocs)
    std::printf(" %s=%zum@%.1f", k.c_str(), v.second / MiB, (reinterpret_cast<std::uintptr_t>(v.first) - low) / double(MiB));
  std::printf(" | spec:%s\n", spec.c_str());
  std::fflush(stdout);
  reset_pool();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--layout") {
    int first = 2;
    if (argc > 3 && std::string(argv[2]) == "--device") { dev = std::atoi(argv[3]); first = 4; }
    CK(cudaSetDevice(dev));
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties(&prop, dev));
    int drv = 0;
    cudaDriverGetVersion(&drv);
    std::printf("device %d: %s, driver API %d, S = %zu MiB\n", dev, prop.name, drv, S / MiB);
    CK(cudaFree(nullptr));
    bool good = true;
    for (int i = first; i < argc; ++i) good = layout_case(argv[i]) && good;
    return good ? 0 : 1;
  }
  if (argc > 1) dev = std::atoi(argv[1]);
  CK(cudaSetDevice(dev));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, dev));
  int drv = 0, rt = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  std::printf("device %d: %s, driver API %d, runtime %d, S = %zu MiB\n", dev, prop.name, drv, rt, S / MiB);
  CK(cudaFree(nullptr));
  std::printf("%-34s | %-11s | %9s | %9s | %9s | %8s | %-28s %s\n", "case", "VAs/allocs", "upl MiB",
              "resv MiB", "used MiB", "1st ms", "hypothesis", "note");
  std::vector<std::size_t> four(4, S);

  run_case("A indep, interleaved creation", "4S: no order, no reuse", [&] { return chains(four, 0); });
  run_case("B indep, all allocs created first", "4S", [&] { return chains(four, 1); });
  run_case("C free_i dep at creation", "1S", [&] { return chains(four, 2); });
  run_case("D free_i edge added later", "4S (issue)", [&] { return chains(four, 3); });
  run_case("E D then cudaGraphClone", "? clone re-creates", [&] { return chains(four, 4); });
  run_case("F via empty node at creation", "1S: path counts", [&] { return chains(four, 5); });
  run_case("G via empty, its in-edge later", "4S?", [&] { return chains(four, 6); });
  run_case("H dep at creation, sizes 1,2,3,4 S", "4S if grows in place?", [&] { return chains({S, 2 * S, 3 * S, 4 * S}, 2); });
  run_case("I dep at creation, sizes 4,3,2,1 S", "4S", [&] { return chains({4 * S, 3 * S, 2 * S, S}, 2); });
  run_case("J dep at creation, sizes 1,4 S", "4S or 5S", [&] { return chains({S, 4 * S}, 2); });
  run_case("K dep at creation, sizes 4,1 S", "4S", [&] { return chains({4 * S, S}, 2); });
  run_case("L dep at creation, 2 MiB x4", "2 MiB", [&] { return chains(std::vector<std::size_t>(4, 2 * MiB), 2); });
  run_case("M dep at creation, 1 MiB x4", "granule?", [&] { return chains(std::vector<std::size_t>(4, MiB), 2); });
  run_case("N indep 1 MiB x4", "packing?", [&] { return chains(std::vector<std::size_t>(4, MiB), 0); });

  // Two live, then one freed, third depends on that free.
  run_case("O a0 a1 live, a2 after f0", "2S", [&] {
    cudaGraph_t g; CK(cudaGraphCreate(&g, 0));
    void *p0, *p1, *p2;
    auto a0 = add_alloc(g, {}, S, &p0); track(p0);
    auto a1 = add_alloc(g, {}, S, &p1); track(p1);
    auto f0 = add_free(g, {a0}, p0);
    auto a2 = add_alloc(g, {f0}, S, &p2); track(p2);
    add_free(g, {a1}, p1); add_free(g, {a2}, p2);
    result r = measure(g); r.note = "a2 vs a0 " + same(p2, p0); CK(cudaGraphDestroy(g)); return r;
  });
  // Which freed block is chosen: a0 (S) and a1 (2S) both freed before a2 (S).
  run_case("P choice: a0 S, a1 2S freed; a2 S", "3S", [&] {
    cudaGraph_t g; CK(cudaGraphCreate(&g, 0));
    void *p0, *p1, *p2;
    auto a0 = add_alloc(g, {}, S, &p0); track(p0);
    auto a1 = add_alloc(g, {}, 2 * S, &p1); track(p1);
    auto f0 = add_free(g, {a0}, p0);
    auto f1 = add_free(g, {a1}, p1);
    auto a2 = add_alloc(g, {f0, f1}, S, &p2); track(p2);
    add_free(g, {a2}, p2);
    result r = measure(g); r.note = "a2=a0 " + same(p2, p0) + " a2=a1 " + same(p2, p1); CK(cudaGraphDestroy(g)); return r;
  });
  // Greedy trap: two S blocks freed; then a 2S alloc after both frees: can it use both?
  run_case("Q a0 S,a1 S freed; a2 2S after", "2S if merged, 4S", [&] {
    cudaGraph_t g; CK(cudaGraphCreate(&g, 0));
    void *p0, *p1, *p2;
    auto a0 = add_alloc(g, {}, S, &p0); track(p0);
    auto a1 = add_alloc(g, {}, S, &p1); track(p1);
    auto f0 = add_free(g, {a0}, p0);
    auto f1 = add_free(g, {a1}, p1);
    auto a2 = add_alloc(g, {f0, f1}, 2 * S, &p2); track(p2);
    add_free(g, {a2}, p2);
    result r = measure(g); r.note = "a2=a0 " + same(p2, p0); CK(cudaGraphDestroy(g)); return r;
  });
  // Alloc created before the free exists, edge added later, but a second alloc created after.
  run_case("R alloc created later w/o dep, same graph", "2S", [&] {
    cudaGraph_t g; CK(cudaGraphCreate(&g, 0));
    void *p0, *p1;
    auto a0 = add_alloc(g, {}, S, &p0); track(p0);
    auto f0 = add_free(g, {a0}, p0);
    auto a1 = add_alloc(g, {}, S, &p1); track(p1);
    add_free(g, {a1}, p1);
    add_edge(g, f0, a1);
    result r = measure(g); r.note = "a1=a0 " + same(p1, p0); CK(cudaGraphDestroy(g)); return r;
  });
  // Dep at creation, then the edge removed: does the driver keep the sharing?
  run_case("S dep at creation, edge removed later", "error or 1S", [&] {
    cudaGraph_t g; CK(cudaGraphCreate(&g, 0));
    void *p0, *p1;
    auto a0 = add_alloc(g, {}, S, &p0); track(p0);
    auto f0 = add_free(g, {a0}, p0);
    auto a1 = add_alloc(g, {f0}, S, &p1); track(p1);
    add_free(g, {a1}, p1);
    bool removed = CK(cudaGraphRemoveDependencies(g, &f0, &a1, nullptr, 1));
    result r = measure(g); r.note = std::string(removed ? "removed" : "remove refused") + " a1=a0 " + same(p1, p0);
    CK(cudaGraphDestroy(g)); return r;
  });

  // Stream capture.
  auto capture = [&](int mode) {
    cudaStream_t s1, s2; CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking)); CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    cudaEvent_t fork, ev; CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming)); CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    cudaGraph_t g = nullptr;
    CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeRelaxed));
    void* p[4];
    if (mode == 0) {  // one stream, 4 sequential alloc/free
      for (int i = 0; i < 4; ++i) { CK(cudaMallocAsync(&p[i], S, s1)); track(p[i]); CK(cudaFreeAsync(p[i], s1)); }
    } else {
      CK(cudaEventRecord(fork, s1)); CK(cudaStreamWaitEvent(s2, fork));
      CK(cudaMallocAsync(&p[0], S, s1)); track(p[0]); CK(cudaFreeAsync(p[0], s1));
      if (mode == 2) { CK(cudaEventRecord(ev, s1)); CK(cudaStreamWaitEvent(s2, ev)); }
      CK(cudaMallocAsync(&p[1], S, s2)); track(p[1]); CK(cudaFreeAsync(p[1], s2));
      if (mode == 3) { CK(cudaEventRecord(ev, s1)); CK(cudaStreamWaitEvent(s2, ev)); }  // join after
      CK(cudaEventRecord(ev, s2)); CK(cudaStreamWaitEvent(s1, ev));
    }
    CK(cudaStreamEndCapture(s1, &g));
    result r = measure(g);
    CK(cudaGraphDestroy(g));
    CK(cudaStreamDestroy(s1)); CK(cudaStreamDestroy(s2)); CK(cudaEventDestroy(fork)); CK(cudaEventDestroy(ev));
    return r;
  };
  run_case("T capture one stream x4", "1S", [&] { return capture(0); });
  run_case("U capture 2 streams, no wait", "2S", [&] { return capture(1); });
  run_case("V capture s2 waits s1's free", "1S", [&] { return capture(2); });
  run_case("W capture s2 waits after its alloc", "2S", [&] { return capture(3); });

  // Child graphs (moved into the parent with cudaGraphAddNode).
  auto child_case = [&](bool dep) {
    cudaGraph_t parent; CK(cudaGraphCreate(&parent, 0));
    cudaGraphNode_t prev = nullptr;
    for (int i = 0; i < 2; ++i) {
      cudaGraph_t c; CK(cudaGraphCreate(&c, 0));
      void* p; auto a = add_alloc(c, {}, S, &p); track(p); add_free(c, {a}, p);
      cudaGraphNodeParams np{};
      np.type = cudaGraphNodeTypeGraph;
      np.graph.graph = c;
      np.graph.ownership = cudaGraphChildGraphOwnershipMove;
      cudaGraphNode_t n = nullptr;
      std::vector<cudaGraphNode_t> deps;
      if (dep && prev) deps.push_back(prev);
      CK(cudaGraphAddNode(&n, parent, deps.data(), nullptr, deps.size(), &np));
      prev = n;
    }
    result r = measure(parent); CK(cudaGraphDestroy(parent)); return r;
  };
  run_case("X two child graphs, dep at creation", "1S", [&] { return child_case(true); });
  run_case("Y two child graphs, no dep", "2S", [&] { return child_case(false); });

  // Several graphs: each alloc S + free, launched into one stream vs two streams.
  auto multi = [&](bool one_stream, bool keep) {
    cudaGraph_t g[2]; cudaGraphExec_t e[2]; cudaStream_t s[2];
    for (int i = 0; i < 2; ++i) {
      CK(cudaGraphCreate(&g[i], 0));
      void* p; auto a = add_alloc(g[i], {}, S, &p); track(p);
      if (!keep) add_free(g[i], {a}, p);
      CK(cudaGraphInstantiateWithFlags(&e[i], g[i], keep ? cudaGraphInstantiateFlagAutoFreeOnLaunch : 0));
      CK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    }
    for (int rep = 0; rep < 2; ++rep)
      for (int i = 0; i < 2; ++i) CK(cudaGraphLaunch(e[i], one_stream ? s[0] : s[i]));
    CK(cudaDeviceSynchronize());
    result r; r.reserved = attr(cudaGraphMemAttrReservedMemHigh); r.used = attr(cudaGraphMemAttrUsedMemHigh);
    r.note = g_ptrs.size() == 1 ? "graphs share one VA" : "";
    for (int i = 0; i < 2; ++i) { CK(cudaGraphExecDestroy(e[i])); CK(cudaGraphDestroy(g[i])); CK(cudaStreamDestroy(s[i])); }
    return r;
  };
  run_case("Z1 2 graphs one stream", "1S", [&] { return multi(true, false); });
  run_case("Z2 2 graphs two streams", "2S?", [&] { return multi(false, false); });
  run_case("Z3 2 autofree graphs one stream", "2S (unfreed held)", [&] { return multi(true, true); });

  // AutoFreeOnLaunch, one graph, alloc only, two launches.
  run_case("Z4 alloc-only, AutoFreeOnLaunch x2", "1S", [&] {
    cudaGraph_t g; CK(cudaGraphCreate(&g, 0)); void* p; add_alloc(g, {}, S, &p); track(p);
    result r = measure(g, cudaGraphInstantiateFlagAutoFreeOnLaunch, 2); CK(cudaGraphDestroy(g)); return r;
  });
  // Upload maps?
  run_case("Z5 C uploaded, then launched", "upload maps", [&] {
    cudaGraph_t g; CK(cudaGraphCreate(&g, 0));
    void *p0, *p1; auto a0 = add_alloc(g, {}, S, &p0); track(p0); auto f0 = add_free(g, {a0}, p0);
    auto a1 = add_alloc(g, {f0}, S, &p1); track(p1); add_free(g, {a1}, p1);
    result r = measure(g, 0, 1, true); CK(cudaGraphDestroy(g)); return r;
  });

  // Does cudaGraphGetNodes return creation order? Create nodes whose creation order is not a
  // topological order (edges added backwards afterwards) and in a captured graph.
  {
    cudaGraph_t g; CK(cudaGraphCreate(&g, 0));
    std::vector<cudaGraphNode_t> made;
    void* p;
    for (int i = 0; i < 6; ++i) made.push_back(add_empty(g, {}));
    made.push_back(add_alloc(g, {}, MiB, &p));
    made.push_back(add_free(g, {made.back()}, p));
    for (int i = 0; i < 5; ++i) add_edge(g, made[i + 1], made[i]);  // reverse chain
    add_edge(g, made[7], made[3]);
    std::size_t n = 0; CK(cudaGraphGetNodes(g, nullptr, &n));
    std::vector<cudaGraphNode_t> got(n); CK(cudaGraphGetNodes(g, got.data(), &n));
    bool same_order = got == made;
    std::printf("cudaGraphGetNodes order == creation order (explicit, reversed edges): %s\n", same_order ? "yes" : "no");
    // After removing and re-adding a node
    CK(cudaGraphDestroyNode(made[2]));
    cudaGraphNode_t extra = add_empty(g, {});
    made.erase(made.begin() + 2); made.push_back(extra);
    CK(cudaGraphGetNodes(g, nullptr, &n)); got.resize(n); CK(cudaGraphGetNodes(g, got.data(), &n));
    std::printf("cudaGraphGetNodes order == creation order after destroying a node: %s\n", got == made ? "yes" : "no");
    std::size_t ne = 0; CK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &ne));
    CK(cudaGraphDestroy(g));
    // Clone keeps the order?
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    void* q[3];
    for (int i = 0; i < 3; ++i) CK(cudaMallocAsync(&q[i], MiB, s));
    for (int i = 2; i >= 0; --i) CK(cudaFreeAsync(q[i], s));
    cudaGraph_t c; CK(cudaStreamEndCapture(s, &c));
    CK(cudaGraphGetNodes(c, nullptr, &n)); got.resize(n); CK(cudaGraphGetNodes(c, got.data(), &n));
    std::string seq;
    for (auto nd : got) {
      cudaGraphNodeType t; CK(cudaGraphNodeGetType(nd, &t));
      if (t == cudaGraphNodeTypeMemAlloc) { cudaMemAllocNodeParams pp{}; CK(cudaGraphMemAllocNodeGetParams(nd, &pp)); for (int i = 0; i < 3; ++i) if (pp.dptr == q[i]) seq += "A" + std::to_string(i) + " "; }
      if (t == cudaGraphNodeTypeMemFree) { void* d; CK(cudaGraphMemFreeNodeGetParams(nd, &d)); for (int i = 0; i < 3; ++i) if (d == q[i]) seq += "F" + std::to_string(i) + " "; }
    }
    std::printf("captured order A0 A1 A2 F2 F1 F0 -> cudaGraphGetNodes gives: %s\n", seq.c_str());
    CK(cudaGraphDestroy(c)); CK(cudaStreamDestroy(s));
  }
  // Large scale: 10,000 chains with deps at creation: time to build + reserved.
  run_case("Z6 2000 chains 2MiB, dep at creation", "2 MiB", [&] { return chains(std::vector<std::size_t>(2000, 2 * MiB), 2); });
  run_case("Z7 2000 chains 2MiB, independent", "4000 MiB", [&] { return chains(std::vector<std::size_t>(2000, 2 * MiB), 0); });
  std::printf("done\n");
  return 0;
}
