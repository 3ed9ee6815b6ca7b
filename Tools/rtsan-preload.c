/* RealtimeSanitizer's runtime as a library to preload into a host that has none (jalv):
   initialised as the library loads, before the host's first call through its interceptors. */
void __rtsan_ensure_initialized(void);
__attribute__((constructor(0))) static void jackvu_rtsan_preload_init(void) { __rtsan_ensure_initialized(); }
