// test/fake_cuda_driver.c: a stand-in libcuda.so.1 for test_cuda_module (a machine without a GPU
// driver): it answers the registry's driver probe with one device and offers nothing else, so the
// CUDA runtime inside the CUDA module then fails to start on it, as on a machine whose driver is
// too old. Only the two calls nn/backend.c makes, with the driver API's int results (0: success).
int cuInit(unsigned flags);
int cuDeviceGetCount(int *count);

int cuInit(unsigned flags) {
  (void)flags;
  return 0;
}

int cuDeviceGetCount(int *count) {
  *count = 1;
  return 0;
}
