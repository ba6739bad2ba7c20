// test/test_cuda_module.c: the CUDA backend's module (libppo_cuda.so) loads and reports through the
// program, on any machine. ctest runs this suite with LD_LIBRARY_PATH at a stand-in libcuda.so.1
// (test/fake_cuda_driver.c) that reports one device: the registry's driver probe passes, the module
// is loaded with every symbol resolved at once (RTLD_NOW: a symbol it lacks fails here), its entry
// runs backend_cuda_open, and the CUDA runtime fails to start on the stand-in. The runtime's reason
// must arrive in this program's error buffer (the module's error_set goes through its host table),
// and "auto" must fall back to the CPU. (On a GPU machine the stand-in shadows the real driver for
// this suite alone, with the same outcome.)
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "nn/backend.h"
#include "nn/backend_impl.h"

Test(cuda_module, loads_and_reports_through_the_program) {
  cr_assert(getenv("LD_LIBRARY_PATH") && strstr(getenv("LD_LIBRARY_PATH"), "fake_cuda_driver"),
            "run through ctest (LD_LIBRARY_PATH at the stand-in driver)");
  void *before = dlopen(PPO_BIN_DIR "/libppo_cuda.so", RTLD_NOW | RTLD_NOLOAD);
  cr_assert_null(before, "the module is loaded before any backend was asked for");
  Backend *b = backend_open("cuda");
  cr_assert_null(b, "a stand-in driver cannot run the CUDA backend");
  const char *msg = error_message();
  // the module was entered: it is loaded now, and the reason is the runtime's, not the probe's
  cr_assert_not_null(dlopen(PPO_BIN_DIR "/libppo_cuda.so", RTLD_NOW | RTLD_NOLOAD),
                     "the registry did not load the module; its message: %s", msg);
  cr_assert(strstr(msg, "backend 'cuda': no CUDA device (") && !strstr(msg, "no CUDA driver") &&
                !strstr(msg, "libcuda.so.1 lacks") && !strstr(msg, "the driver's cu") &&
                !strstr(msg, "the driver reports none") && !strstr(msg, "module"),
            "the module's own reason (from the CUDA runtime) is expected, got: %s", msg);
  b = backend_open("auto");
  cr_assert(b, "auto: %s", error_message());
  cr_assert_str_eq(backend_name(b), "cpu");
  backend_close(b);
}

// The module's op table has every required member, checked without a device (an op added to the
// seam and left out of cuda_ops would be a NULL call on a GPU only; backend_open refuses it there).
Test(cuda_module, its_op_table_is_complete) {
  void *module = dlopen(PPO_BIN_DIR "/libppo_cuda.so", RTLD_NOW | RTLD_LOCAL);
  cr_assert(module, "%s", dlerror());
  CudaModuleOps ops_of = (CudaModuleOps)dlsym(module, CUDA_MODULE_OPS);
  cr_assert(ops_of, "the module exports no %s", CUDA_MODULE_OPS);
  const BackendOps *ops = ops_of();
  cr_expect_eq(backend_ops_missing(ops), -1, "member %d of cuda_ops is NULL", backend_ops_missing(ops));
  cr_expect_neq(ops->graph_record, NULL, "the CUDA backend records graphs");
}

// A module path that does not exist is named (PPO_CUDA_MODULE overrides the program's folder).
Test(cuda_module, a_missing_module_is_named) {
  setenv("PPO_CUDA_MODULE", "/nonexistent/libppo_cuda.so", 1);  // Criterion: a process per test
  cr_assert_null(backend_open("cuda"));
  cr_assert(strstr(error_message(), "backend 'cuda': the CUDA backend module did not load (/nonexistent/libppo_cuda.so"),
            "got: %s", error_message());
}
