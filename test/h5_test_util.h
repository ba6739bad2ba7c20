// test/h5_test_util.h: comparing HDF5 files in tests, and damaging them the way a bad disk or a
// partial copy would (header-only, static inline functions).
// Depends on common/h5io.h, test/program_util.h, HDF5, Criterion.
#ifndef PPO_TEST_H5_TEST_UTIL_H
#define PPO_TEST_H5_TEST_UTIL_H

#include <criterion/criterion.h>
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/h5io.h"
#include "test/program_util.h"

// The named datasets of two files, byte for byte (the same stored type on both sides: raw bytes are
// compared). A missing dataset or a different rank fails the test; a difference is reported by name
// and the test goes on.
static inline void expect_same_datasets(const char *a_path, const char *b_path, const char *const *names,
                                        size_t count) {
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

// A copy of from at to with element `index` of a numeric dataset set to value (through HDF5, which
// converts to the stored type and keeps the checksums right): a damaged checkpoint by its numbers.
static inline void copy_with_element(const char *from, const char *to, const char *dataset, size_t index,
                                     double value) {
  size_t size;
  char *bytes = read_text(from, &size);
  cr_assert_not_null(bytes, "%s", from);
  FILE *out = fopen(to, "wb");
  cr_assert(out && fwrite(bytes, 1, size, out) == size && fclose(out) == 0, "%s", to);
  free(bytes);
  hid_t f = H5Fopen(to, H5F_ACC_RDWR, H5P_DEFAULT);
  cr_assert_geq(f, 0, "%s", to);
  hid_t ds = H5Dopen2(f, dataset, H5P_DEFAULT), space = H5Dget_space(ds);
  cr_assert_geq(ds, 0, "%s", dataset);
  hssize_t n = H5Sget_simple_extent_npoints(space);
  cr_assert((hssize_t)index < n, "%s has %lld elements", dataset, (long long)n);
  double *v = malloc((size_t)n * sizeof(double));
  cr_assert_geq(H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v), 0);
  v[index] = value;
  cr_assert_geq(H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v), 0);
  free(v);
  H5Sclose(space), H5Dclose(ds), H5Fclose(f);
}

// Changes one bit of the byte at offset, behind HDF5's back.
static inline void flip_byte(const char *path, long offset) {
  FILE *raw = fopen(path, "r+b");
  cr_assert_not_null(raw, "%s", path);
  cr_assert_eq(fseek(raw, offset, SEEK_SET), 0);
  int c = fgetc(raw);
  cr_assert_neq(c, EOF);
  cr_assert_eq(fseek(raw, offset, SEEK_SET), 0);
  cr_assert_neq(fputc(c ^ 0x10, raw), EOF);
  cr_assert_eq(fclose(raw), 0);
}

// Where text first occurs in the file's bytes.
static inline long file_offset_of(const char *path, const char *text) {
  size_t size, len = strlen(text);
  char *bytes = read_text(path, &size);
  cr_assert_not_null(bytes, "%s", path);
  long offset = -1;
  for (size_t i = 0; offset < 0 && len <= size && i <= size - len; i++)
    if (memcmp(bytes + i, text, len) == 0) offset = (long)i;
  free(bytes);
  cr_assert_geq(offset, 0, "%s not in %s", text, path);
  return offset;
}

// The file offset of the first stored chunk of a chunked dataset.
static inline long first_chunk_offset(const char *path, const char *dataset) {
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert(f >= 0, "%s", path);
  hid_t ds = H5Dopen2(f, dataset, H5P_DEFAULT), space = H5Dget_space(ds);
  cr_assert(ds >= 0, "%s: %s", path, dataset);
  hsize_t chunk_at[H5S_MAX_RANK], chunk_bytes;
  unsigned mask;
  haddr_t chunk_addr;
  cr_assert_geq(H5Dget_chunk_info(ds, space, 0, chunk_at, &mask, &chunk_addr, &chunk_bytes), 0, "%s is not chunked",
                dataset);
  H5Sclose(space), H5Dclose(ds), H5Fclose(f);
  return (long)chunk_addr;
}

#endif
