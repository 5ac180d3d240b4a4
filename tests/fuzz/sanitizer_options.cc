// Sanitizer defaults of every fuzz target (the environment's ASAN_OPTIONS / UBSAN_OPTIONS still
// win). An allocation above 1 GiB returns null instead of reaching libFuzzer's -malloc_limit_mb
// (2 GiB by default): the library checks std::aligned_alloc's result and throws OutOfMemory, which
// is a clean refusal; `new` of such a size still aborts, as it should, since that is an unchecked
// size computed from the input.
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=1024:detect_leaks=1";
}

extern "C" const char* __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1"; }
