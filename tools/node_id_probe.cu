// A probe (run once on an H100; output in reports/gpu-runs/2026-11-23-H100-node-ids.txt).
// Build: nvcc -arch=sm_90 -std=c++17 -cudart static tools/node_id_probe.cu -o node_id_probe -lcupti -lcuda
// Run: node_id_probe (activity records only), node_id_probe sub (also the GRAPHNODE_CLONED callback).
// Which graph node id do CUPTI kernel records carry for an instantiated graph: the template
// node's (cuptiGetGraphNodeId) or a clone's (CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED)?
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x) do { auto rc_ = (x); if (rc_ != 0) { std::printf("%s failed %d line %d\n", #x, (int)rc_, __LINE__); std::exit(1);} } while (0)

__global__ void spin(long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {}
}

static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max) {
  *size = 1 << 20; *buffer = (uint8_t*)aligned_alloc(8, *size); *max = 0;
}
static void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      auto* k = (CUpti_ActivityKernel10*)r;
      std::printf("kernel record: graphId %u graphNodeId %llu dur %.1f us corr %u\n", k->graphId,
                  (unsigned long long)k->graphNodeId, (k->end - k->start) / 1e3, k->correlationId);
    }
  }
  free(buffer);
}
static void CUPTIAPI on_callback(void*, CUpti_CallbackDomain d, CUpti_CallbackId id, const void* data) {
  if (d != CUPTI_CB_DOMAIN_RESOURCE) return;
  auto* rd = (const CUpti_ResourceData*)data;
  if (id == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    auto* g = (CUpti_GraphData*)rd->resourceDescriptor;
    uint64_t orig = 0, clone = 0;
    cuptiGetGraphNodeId(g->originalNode, &orig);
    cuptiGetGraphNodeId(g->node, &clone);
    std::printf("cloned: original %llu -> clone %llu\n", (unsigned long long)orig, (unsigned long long)clone);
  }
}

int main(int argc, char** argv) {
  const bool subscribe = argc > 1;
  CK(cudaFree(nullptr));
  CK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  CK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  CUpti_SubscriberHandle sub{};
  if (subscribe) {
    CK(cuptiSubscribe(&sub, on_callback, nullptr));
    CK(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED));
  }
  cudaGraph_t g, child;
  CK(cudaGraphCreate(&g, 0));
  CK(cudaGraphCreate(&child, 0));
  long long cyc = 100000;
  void* args[] = {&cyc};
  cudaKernelNodeParams p{};
  p.func = (void*)spin; p.gridDim = dim3(1); p.blockDim = dim3(32); p.kernelParams = args;
  cudaGraphNode_t k1, k2, kc, c;
  CK(cudaGraphAddKernelNode(&k1, g, nullptr, 0, &p));
  CK(cudaGraphAddKernelNode(&k2, g, nullptr, 0, &p));
  CK(cudaGraphAddKernelNode(&kc, child, nullptr, 0, &p));
  CK(cudaGraphAddChildGraphNode(&c, g, &k1, 1, child));
  cudaGraph_t embedded; CK(cudaGraphChildGraphNodeGetGraph(c, &embedded));
  size_t n = 0; CK(cudaGraphGetNodes(embedded, nullptr, &n)); std::vector<cudaGraphNode_t> en(n);
  CK(cudaGraphGetNodes(embedded, en.data(), &n));
  uint64_t id = 0; uint32_t gid = 0;
  CK(cuptiGetGraphId(g, &gid)); std::printf("graph id %u\n", gid);
  for (auto [name, node] : {std::pair{"k1", k1}, {"k2", k2}, {"child node", c}, {"kc (child's own)", kc}, {"kc in embedded", en[0]}}) {
    CK(cuptiGetGraphNodeId(node, &id)); std::printf("template %s id %llu\n", name, (unsigned long long)id);
  }
  cudaGraphExec_t e; CK(cudaGraphInstantiate(&e, g, 0));
  uint32_t eid = 0; CK(cuptiGetGraphExecId(e, &eid)); std::printf("exec id %u\n", eid);
  cudaStream_t s; CK(cudaStreamCreate(&s));
  for (int i = 0; i < 2; ++i) CK(cudaGraphLaunch(e, s));
  CK(cudaStreamSynchronize(s));
  CK(cuptiActivityFlushAll(1));
  std::printf("done\n");
  return 0;
}
