// Two libraries that define the symbol the program defines too (preload_test.cpp): this one, and
// after it next_b. dlsym(RTLD_NEXT, ...) asked here must find next_b's, whoever interposes dlsym.
#include <dlfcn.h>

extern "C" {
__attribute__((visibility("default"))) int probe_which() { return 1; }
// Not a tail call (the empty asm after it): glibc reads the caller from the return address.
__attribute__((visibility("default"))) void* probe_next_from_a() {
  void* found = dlsym(RTLD_NEXT, "probe_which");
  asm volatile("" ::: "memory");
  return found;
}
}
