// A stand-in for the recording library's exports the Python companion calls, each doing nothing:
// tools/companion_ab.py loads it so that what it times is the companion's own work in a PyTorch
// program, its words' calls included, and none of the library's.
extern "C" {

__attribute__((visibility("default"))) void gmem_record_say(const char*) {}

__attribute__((visibility("default"))) void gmem_record_next_capture(const char*, const char*, int, const char*,
                                                                     const char*) {}
}
