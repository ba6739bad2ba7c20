// test/h5_test_util.h: comparing HDF5 files in tests (header-only, static functions).
// Depends on common/h5io.h, HDF5, Criterion.
#ifndef PPO_TEST_H5_TEST_UTIL_H
#define PPO_TEST_H5_TEST_UTIL_H

#include <criterion/criterion.h>
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/h5io.h"

// The named datasets of two files, byte for byte (the same stored type on both sides: raw bytes are
// compared). A missing dataset or a different rank fails the test; a difference is reported by name
// and the test goes on.
static void expect_same_datasets(const char *a_path, const char *b_path, const char *const *names, size_t count) {
  hid_t a = h5io_open_read(a_path), b = h5io_open_read(b_path);
  cr_assert(a >= 0 && b >= 0, "%s", error_message());
  for (size_t i = 0; i < count; i++) {
    hsize_t da[4], db[4];
    int ra = h5io_shape(a, names[i], 4, da), rb = h5io_shape(b, names[i], 4, db);
    cr_assert(ra > 0 && ra == rb, "%s: %s", names[i], error_message());
    size_t n = 1;
    for (int k = 0; k < ra; k++) n *= da[k];
    hid_t dsa = H5Dopen2(a, names[i], H5P_DEFAULT), dsb = H5Dopen2(b, names[i], H5P_DEFAULT);
    hid_t type = H5Dget_type(dsa);
    size_t size = H5Tget_size(type);
    unsigned char *x = malloc(n * size), *y = malloc(n * size);
    H5Dread(dsa, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, x);
    H5Dread(dsb, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, y);
    H5Tclose(type);
    cr_expect(memcmp(x, y, n * size) == 0, "%s differs between %s and %s", names[i], a_path, b_path);
    free(x);
    free(y);
    H5Dclose(dsa);
    H5Dclose(dsb);
  }
  h5io_close(a);
  h5io_close(b);
}

#endif
