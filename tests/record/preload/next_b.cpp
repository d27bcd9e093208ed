// The library after next_a (preload_test.cpp).
extern "C" {
__attribute__((visibility("default"))) int probe_which() { return 2; }
__attribute__((visibility("default"))) int probe_b_marker() { return 2; }
}
