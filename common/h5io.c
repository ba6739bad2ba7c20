// common/h5io.c: see h5io.h.
#include "h5io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "error.h"

// HDF5 prints its error stack on every failed call by default; our messages replace it.
// Also the process's first HDF5 call, so it can keep HDF5 from closing files at exit: a file whose
// H5Fclose failed (disk full) stays in HDF5's table, and closing it again at exit segfaulted
// (HDF5 1.10). Nothing is lost: every file this program publishes was closed by h5io_commit, and
// a writer that failed has no file under its final name.
static void h5io_quiet(void) {
  static int quiet = 0;
  if (!quiet) {
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    quiet = 1;
  }
}

// The file name behind any location id, for messages.
static const char *h5io_file_name(hid_t loc, char *buf, size_t capacity) {
  if (H5Fget_name(loc, buf, capacity) < 0) snprintf(buf, capacity, "(HDF5 file)");
  return buf;
}

const char *h5io_type_name(H5ioType type) {
  switch (type) {
    case H5IO_UINT8:
      return "uint8";
    case H5IO_INT32:
      return "int32";
    case H5IO_UINT32:
      return "uint32";
    case H5IO_INT64:
      return "int64";
    case H5IO_UINT64:
      return "uint64";
    case H5IO_FLOAT32:
      return "float32";
    case H5IO_FLOAT64:
      return "float64";
  }
  return "?";
}

static hid_t h5io_memory_type(H5ioType type) {
  switch (type) {
    case H5IO_UINT8:
      return H5T_NATIVE_UINT8;
    case H5IO_INT32:
      return H5T_NATIVE_INT32;
    case H5IO_UINT32:
      return H5T_NATIVE_UINT32;
    case H5IO_INT64:
      return H5T_NATIVE_INT64;
    case H5IO_UINT64:
      return H5T_NATIVE_UINT64;
    case H5IO_FLOAT32:
      return H5T_NATIVE_FLOAT;
    case H5IO_FLOAT64:
      return H5T_NATIVE_DOUBLE;
  }
  return H5I_INVALID_HID;
}

// Files are always little-endian, whatever machine wrote them.
static hid_t h5io_file_type(H5ioType type) {
  switch (type) {
    case H5IO_UINT8:
      return H5T_STD_U8LE;
    case H5IO_INT32:
      return H5T_STD_I32LE;
    case H5IO_UINT32:
      return H5T_STD_U32LE;
    case H5IO_INT64:
      return H5T_STD_I64LE;
    case H5IO_UINT64:
      return H5T_STD_U64LE;
    case H5IO_FLOAT32:
      return H5T_IEEE_F32LE;
    case H5IO_FLOAT64:
      return H5T_IEEE_F64LE;
  }
  return H5I_INVALID_HID;
}

static int h5io_type_is_float(H5ioType type) { return type == H5IO_FLOAT32 || type == H5IO_FLOAT64; }

// --- files ---------------------------------------------------------------------------------------------

#define H5IO_COMPACT_ATTRIBUTES 64  // attributes of a group kept in its (checksummed) header

// Why H5Fcreate failed at tmp_path, which HDF5 does not say: the same file created and its first
// block written by hand gives the errno (no such directory, permission, a read-only or full file
// system). The file is removed by the caller.
static void create_failure(const char *tmp_path, char *why, size_t capacity) {
  static const char block[4096];
  int fd = open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    errno = 0;  // HDF5's failure left its own; a short write need not set one (then: no space)
    if (write(fd, block, sizeof block) != (ssize_t)sizeof block || fsync(fd) != 0) err = errno ? errno : ENOSPC;
    close(fd);
  }
  if (err == ENOSPC || err == EDQUOT)
    snprintf(why, capacity, "%s: disk full?", strerror(err));
  else if (err)
    snprintf(why, capacity, "%s", strerror(err));
  else
    snprintf(why, capacity, "HDF5 refused; the directory takes a plain file");
}

int h5io_create(H5ioWriter *writer, const char *path) {
  h5io_quiet();
  memset(writer, 0, sizeof *writer);
  writer->file = H5I_INVALID_HID;
  if (strlen(path) >= sizeof writer->path) {
    error_set("%s: path too long", path);
    return -1;
  }
  strcpy(writer->path, path);
  if (atomic_file_temp_path(path, writer->tmp_path, sizeof writer->tmp_path) != 0) return -1;
  // The 1.10 format checksums all the metadata (h5io.h): the superblock (v3), the object headers
  // and the chunk indexes (fixed and extensible arrays, v2 B-trees), where the 1.8 format's v1
  // B-trees had none, so one flipped bit there made a dataset read as zeros. Attributes are kept
  // in the object header ("compact") with its checksum; past 8 on an object HDF5 moves them to a
  // fractal heap, which stores one too large for its blocks (a checkpoint's configuration text,
  // some KiB) without a checksum.
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fcpl = H5Pcreate(H5P_FILE_CREATE);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST);
  H5Pset_attr_phase_change(fcpl, H5IO_COMPACT_ATTRIBUTES, 0);  // the root group's (checkpoints have 12)
  // No times in the root group's header either (the other groups and the datasets: h5io_make_groups,
  // h5io_write): the same content gives the same file bytes.
  H5Pset_obj_track_times(fcpl, 0);
  writer->file = H5Fcreate(writer->tmp_path, H5F_ACC_TRUNC, fcpl, fapl);
  H5Pclose(fcpl);
  H5Pclose(fapl);
  if (writer->file < 0) {
    char why[160];
    create_failure(writer->tmp_path, why, sizeof why);
    error_set("%s: cannot create HDF5 file (%s)", path, why);
    atomic_file_discard(writer->tmp_path);
    return -1;
  }
  return 0;
}

int h5io_commit(H5ioWriter *writer) {
  herr_t flushed = H5Fflush(writer->file, H5F_SCOPE_GLOBAL);
  herr_t closed = H5Fclose(writer->file);
  writer->file = H5I_INVALID_HID;
  if (flushed < 0 || closed < 0) {
    error_set("%s: writing the HDF5 file failed (disk full?)", writer->path);
    atomic_file_discard(writer->tmp_path);
    return -1;
  }
  return atomic_file_publish(writer->tmp_path, writer->path);
}

void h5io_abort(H5ioWriter *writer) {
  if (writer->file >= 0) H5Fclose(writer->file);
  writer->file = H5I_INVALID_HID;
  if (writer->tmp_path[0]) atomic_file_discard(writer->tmp_path);
}

// H5Ewalk2's visitor: notes whether the failure is a file shorter than its superblock says.
static herr_t note_truncated(unsigned n, const H5E_error2_t *e, void *truncated) {
  (void)n;
  if (e->desc && strstr(e->desc, "truncated file")) *(int *)truncated = 1;
  return 0;
}

hid_t h5io_open_read(const char *path) {
  h5io_quiet();
  if (access(path, R_OK) != 0) {
    error_set("%s: cannot open: %s", path, strerror(errno));
    return H5I_INVALID_HID;
  }
  // H5Fis_hdf5 exists in 1.10 (Debian 12) and, deprecated, in later versions.
  if (H5Fis_hdf5(path) <= 0) {
    error_set("%s: not an HDF5 file (or a damaged one)", path);
    error_mark_damaged();
    return H5I_INVALID_HID;
  }
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  // The signature is there but the file does not open. Most often it was cut short (a partial copy,
  // an interrupted transfer, a full disk): HDF5 finds an end of file before the one its superblock
  // records, and says "truncated file" on its error stack.
  if (file < 0) {
    int truncated = 0;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, note_truncated, &truncated);
    if (truncated)
      error_set(
          "%s: the HDF5 file is cut short (a partial copy, an interrupted transfer or a full disk); use "
          "another copy of it",
          path);
    else
      error_set("%s: cannot open this HDF5 file (damaged, written by a newer HDF5, or held by a process writing it)",
                path);
    error_mark_damaged();
  }
  return file;
}

void h5io_close(hid_t file) {
  if (file >= 0) H5Fclose(file);
}

// --- datasets ------------------------------------------------------------------------------------------

// The message for metadata HDF5 could not read: with the format's checksums (h5io_create), damage.
static void h5io_set_damaged(hid_t loc, const char *what) {
  char file_name[512];
  error_set(
      "%s: cannot read %s: the file's structure is damaged (it does not match its checksum: a partial copy, "
      "a disk or transfer error); use another copy of it",
      h5io_file_name(loc, file_name, sizeof file_name), what);
  error_mark_damaged();
}

// 1: name exists, 0: it does not, -1: a group on the way could not be read (h5io_set_damaged).
static int h5io_lookup(hid_t loc, const char *name) {
  h5io_quiet();
  // H5Lexists fails (rather than answering no) when an intermediate group is missing: walk the path.
  char prefix[1024];
  size_t len = strlen(name);
  if (len == 0 || len >= sizeof prefix) return 0;
  if (strcmp(name, "/") == 0) return 1;
  for (size_t i = 1; i <= len; i++) {
    if (i == len || name[i] == '/') {
      memcpy(prefix, name, i);
      prefix[i] = '\0';
      htri_t found = H5Lexists(loc, prefix, H5P_DEFAULT);
      if (found < 0) h5io_set_damaged(loc, name);
      if (found <= 0) return found < 0 ? -1 : 0;
    }
  }
  return 1;
}

bool h5io_exists(hid_t loc, const char *name) { return h5io_lookup(loc, name) > 0; }

// Creates the groups on the way to name (and name itself when `whole`) that do not exist yet. Like
// the root group (h5io_create), each keeps up to H5IO_COMPACT_ATTRIBUTES attributes in its own
// checksummed header, where HDF5's default moves them past 8 to a fractal heap that stores a large
// one without a checksum (h5io_create; a market file's /bars has 9, all short). No modification
// times: the same data gives the same file bytes.
static int h5io_make_groups(hid_t loc, const char *name, bool whole) {
  char prefix[1024], file_name[512];
  size_t len = strlen(name);
  if (len >= sizeof prefix) {
    error_set("%s: object name %s too long", h5io_file_name(loc, file_name, sizeof file_name), name);
    return -1;
  }
  int rc = 0;
  hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
  H5Pset_obj_track_times(gcpl, 0);
  H5Pset_attr_phase_change(gcpl, H5IO_COMPACT_ATTRIBUTES, 0);
  for (size_t i = 1; i <= len && rc == 0; i++) {
    if (!(i == len ? whole : name[i] == '/')) continue;
    memcpy(prefix, name, i);
    prefix[i] = '\0';
    htri_t found = H5Lexists(loc, prefix, H5P_DEFAULT);
    if (found > 0) continue;
    hid_t group = found == 0 ? H5Gcreate2(loc, prefix, H5P_DEFAULT, gcpl, H5P_DEFAULT) : H5I_INVALID_HID;
    if (group < 0) {
      error_set("%s: cannot create group %s", h5io_file_name(loc, file_name, sizeof file_name), prefix);
      rc = -1;
    } else {
      H5Gclose(group);
    }
  }
  H5Pclose(gcpl);
  return rc;
}

int h5io_write(hid_t loc, const char *name, H5ioType type, int rank, const hsize_t *dims, const void *data,
               int filters) {
  const int compress_level = filters & 0xff;
  const bool checksum = (filters & H5IO_CHECKSUM) != 0;
  h5io_quiet();
  char file_name[512];
  if (rank < 1 || rank > H5IO_MAX_RANK) {
    error_set("%s: dataset %s: rank %d is not supported (1 to %d)", h5io_file_name(loc, file_name, sizeof file_name),
              name, rank, H5IO_MAX_RANK);
    return -1;
  }
  hsize_t total = 1;
  for (int i = 0; i < rank; i++) total *= dims[i];

  if (h5io_make_groups(loc, name, false) != 0) return -1;
  hid_t space = H5Screate_simple(rank, dims, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_obj_track_times(dcpl, 0);  // no modification times: the same data gives the same file bytes
  const bool deflate = compress_level > 0 && H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0;
  if ((deflate || checksum) && total > 0) {
    // Chunks of about 256 KiB along the first axis; the other axes whole.
    hsize_t chunk[H5IO_MAX_RANK];
    hsize_t row = 1;
    for (int i = 1; i < rank; i++) {
      chunk[i] = dims[i];
      row *= dims[i];
    }
    size_t element = H5Tget_size(h5io_memory_type(type));
    hsize_t rows = (262144 / element) / (row ? row : 1);
    chunk[0] = rows < 1 ? 1 : (rows > dims[0] ? dims[0] : rows);
    H5Pset_chunk(dcpl, rank, chunk);
    if (deflate) {
      H5Pset_shuffle(dcpl);
      H5Pset_deflate(dcpl, (unsigned)(compress_level > 9 ? 9 : compress_level));
    }
    if (checksum) H5Pset_fletcher32(dcpl);  // of the stored (filtered) bytes of each chunk
  }
  int rc = -1;
  hid_t dset = H5Dcreate2(loc, name, h5io_file_type(type), space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (dset < 0) {
    error_set("%s: cannot create dataset %s (does it exist already?)", h5io_file_name(loc, file_name, sizeof file_name),
              name);
  } else if (total > 0 && H5Dwrite(dset, h5io_memory_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    error_set("%s: cannot write dataset %s", h5io_file_name(loc, file_name, sizeof file_name), name);
  } else {
    rc = 0;
  }
  if (dset >= 0) H5Dclose(dset);
  H5Pclose(dcpl);
  H5Sclose(space);
  return rc;
}

int h5io_shape(hid_t loc, const char *name, int max_rank, hsize_t *dims) {
  h5io_quiet();
  char file_name[512];
  int found = h5io_lookup(loc, name);
  if (found == 0) error_set("%s: dataset %s is missing", h5io_file_name(loc, file_name, sizeof file_name), name);
  if (found <= 0) return -1;
  hid_t dset = H5Dopen2(loc, name, H5P_DEFAULT);
  if (dset < 0) {
    // A group by that name, or a dataset whose header (layout, chunk index) fails its checksum.
    H5O_info_t info;
    if (H5Oget_info_by_name2(loc, name, &info, H5O_INFO_BASIC, H5P_DEFAULT) >= 0 && info.type != H5O_TYPE_DATASET)
      error_set("%s: %s is not a dataset", h5io_file_name(loc, file_name, sizeof file_name), name);
    else
      h5io_set_damaged(loc, name);
    return -1;
  }
  hid_t space = H5Dget_space(dset);
  int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0 || rank > max_rank) {
    error_set("%s: dataset %s has rank %d, at most %d expected", h5io_file_name(loc, file_name, sizeof file_name), name,
              rank, max_rank);
    rank = -1;
  } else {
    H5Sget_simple_extent_dims(space, dims, NULL);
  }
  H5Sclose(space);
  H5Dclose(dset);
  return rank;
}

// "(3, 4)" for messages.
static void h5io_format_dims(char *buf, size_t capacity, int rank, const hsize_t *dims) {
  size_t used = (size_t)snprintf(buf, capacity, "(");
  for (int i = 0; i < rank && used < capacity; i++)
    used += (size_t)snprintf(buf + used, capacity - used, "%s%llu", i ? ", " : "", (unsigned long long)dims[i]);
  if (used < capacity) snprintf(buf + used, capacity - used, ")");
}

int h5io_read(hid_t loc, const char *name, H5ioType type, int rank, const hsize_t *dims, void *out) {
  char file_name[512];
  hsize_t stored[H5IO_MAX_RANK];
  int stored_rank = h5io_shape(loc, name, H5IO_MAX_RANK, stored);
  if (stored_rank < 0) return -1;
  int same = stored_rank == rank;
  for (int i = 0; same && i < rank; i++) same = stored[i] == dims[i];
  if (!same) {
    char want[128], got[128];
    h5io_format_dims(want, sizeof want, rank, dims);
    h5io_format_dims(got, sizeof got, stored_rank, stored);
    error_set("%s: dataset %s has shape %s but %s was expected", h5io_file_name(loc, file_name, sizeof file_name), name,
              got, want);
    return -1;
  }
  hid_t dset = H5Dopen2(loc, name, H5P_DEFAULT);
  hid_t ftype = H5Dget_type(dset);
  H5T_class_t cls = H5Tget_class(ftype);
  H5Tclose(ftype);
  int rc = -1;
  if ((cls == H5T_FLOAT) != (h5io_type_is_float(type) != 0) || (cls != H5T_FLOAT && cls != H5T_INTEGER)) {
    error_set("%s: dataset %s holds %s numbers but %s was expected", h5io_file_name(loc, file_name, sizeof file_name),
              name, cls == H5T_FLOAT ? "floating-point" : (cls == H5T_INTEGER ? "integer" : "non-numeric"),
              h5io_type_name(type));
  } else if (H5Dread(dset, h5io_memory_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0) {
    hid_t dcpl = H5Dget_create_plist(dset);
    unsigned flags = 0, config = 0;
    size_t n_values = 0;
    bool checked = H5Pget_filter_by_id2(dcpl, H5Z_FILTER_FLETCHER32, &flags, &n_values, NULL, 0, NULL, &config) >= 0;
    H5Pclose(dcpl);
    if (checked)
      error_set(
          "%s: dataset %s does not match its checksum: the file is damaged (a partial copy, a disk or "
          "transfer error); use another copy of it",
          h5io_file_name(loc, file_name, sizeof file_name), name);
    else
      error_set("%s: cannot read dataset %s as %s (damaged file or values out of range)",
                h5io_file_name(loc, file_name, sizeof file_name), name, h5io_type_name(type));
    error_mark_damaged();
  } else {
    rc = 0;
  }
  H5Dclose(dset);
  return rc;
}

// --- attributes ----------------------------------------------------------------------------------------

int h5io_attr_find(hid_t loc, const char *object, const char *attr) {
  int found = h5io_lookup(loc, object);
  if (found <= 0) return found;
  htri_t has = H5Aexists_by_name(loc, object, attr, H5P_DEFAULT);
  if (has < 0) {
    char what[256];
    snprintf(what, sizeof what, "the attributes of %s", object);
    h5io_set_damaged(loc, what);
  }
  return has < 0 ? -1 : has > 0;
}

bool h5io_attr_exists(hid_t loc, const char *object, const char *attr) { return h5io_attr_find(loc, object, attr) > 0; }

// Creates (replacing any old one) attribute `attr` on `object` with a scalar of file type `ftype`.
static int h5io_attr_write(hid_t loc, const char *object, const char *attr, hid_t ftype, hid_t mtype,
                           const void *value) {
  h5io_quiet();
  char file_name[512];
  if (h5io_make_groups(loc, object, true) != 0) return -1;  // attributes on a group not made yet
  if (H5Aexists_by_name(loc, object, attr, H5P_DEFAULT) > 0) H5Adelete_by_name(loc, object, attr, H5P_DEFAULT);
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate_by_name(loc, object, attr, ftype, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int rc = -1;
  if (a < 0 || H5Awrite(a, mtype, value) < 0)
    error_set("%s: cannot write attribute %s of %s", h5io_file_name(loc, file_name, sizeof file_name), attr, object);
  else
    rc = 0;
  if (a >= 0) H5Aclose(a);
  H5Sclose(space);
  return rc;
}

int h5io_attr_write_string(hid_t loc, const char *object, const char *attr, const char *value) {
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, strlen(value) + 1);
  H5Tset_strpad(type, H5T_STR_NULLTERM);
  H5Tset_cset(type, H5T_CSET_UTF8);
  int rc = h5io_attr_write(loc, object, attr, type, type, value);
  H5Tclose(type);
  return rc;
}

int h5io_attr_write_int64(hid_t loc, const char *object, const char *attr, int64_t value) {
  return h5io_attr_write(loc, object, attr, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

int h5io_attr_write_double(hid_t loc, const char *object, const char *attr, double value) {
  return h5io_attr_write(loc, object, attr, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

// Opens attribute `attr` of `object` or sets the error message.
static hid_t h5io_attr_open(hid_t loc, const char *object, const char *attr) {
  char file_name[512];
  int found = h5io_attr_find(loc, object, attr);
  if (found == 0)
    error_set("%s: attribute %s of %s is missing", h5io_file_name(loc, file_name, sizeof file_name), attr, object);
  if (found <= 0) return H5I_INVALID_HID;
  return H5Aopen_by_name(loc, object, attr, H5P_DEFAULT, H5P_DEFAULT);
}

int h5io_attr_read_string(hid_t loc, const char *object, const char *attr, char *out, size_t capacity) {
  char file_name[512];
  hid_t a = h5io_attr_open(loc, object, attr);
  if (a < 0) return -1;
  hid_t ftype = H5Aget_type(a);
  hid_t space = H5Aget_space(a);
  hssize_t count = H5Sget_simple_extent_npoints(space);
  int rc = -1;
  if (H5Tget_class(ftype) != H5T_STRING) {
    error_set("%s: attribute %s of %s is not a string", h5io_file_name(loc, file_name, sizeof file_name), attr, object);
  } else if (count != 1) {  // an array of strings would be read into room for one
    error_set("%s: attribute %s of %s holds %lld strings, one expected",
              h5io_file_name(loc, file_name, sizeof file_name), attr, object, (long long)count);
  } else if (H5Tis_variable_str(ftype) > 0) {
    // Variable-length strings (h5py's default): HDF5 allocates, we copy and free.
    hid_t mtype = H5Tcopy(H5T_C_S1);
    H5Tset_size(mtype, H5T_VARIABLE);
    H5Tset_cset(mtype, H5Tget_cset(ftype));  // HDF5 does not convert between ASCII and UTF-8
    char *value = NULL;
    if (H5Aread(a, mtype, &value) >= 0 && value) {
      size_t length = strlen(value);
      if (length + 1 > capacity)  // refused as a fixed-length one is, not cut
        error_set("%s: attribute %s of %s is too long (%zu bytes, at most %zu)",
                  h5io_file_name(loc, file_name, sizeof file_name), attr, object, length, capacity - 1);
      else
        memcpy(out, value, length + 1), rc = 0;
      H5free_memory(value);
    }
    H5Tclose(mtype);
  } else {
    size_t size = H5Tget_size(ftype);
    if (size + 1 > capacity) {
      error_set("%s: attribute %s of %s is too long (%zu bytes, at most %zu)",
                h5io_file_name(loc, file_name, sizeof file_name), attr, object, size, capacity - 1);
    } else {
      hid_t mtype = H5Tcopy(H5T_C_S1);
      H5Tset_size(mtype, size + 1);  // room for a terminator even when the file pads with spaces
      H5Tset_strpad(mtype, H5T_STR_NULLTERM);
      H5Tset_cset(mtype, H5Tget_cset(ftype));
      if (H5Aread(a, mtype, out) >= 0) rc = 0;
      H5Tclose(mtype);
    }
  }
  if (rc != 0 && error_message()[0] == '\0')
    error_set("%s: cannot read attribute %s of %s", h5io_file_name(loc, file_name, sizeof file_name), attr, object);
  H5Sclose(space);
  H5Tclose(ftype);
  H5Aclose(a);
  return rc;
}

// Reads a numeric scalar attribute of class `want_class` converted to `mtype`.
static int h5io_attr_read_number(hid_t loc, const char *object, const char *attr, H5T_class_t want_class, hid_t mtype,
                                 void *out) {
  char file_name[512];
  hid_t a = h5io_attr_open(loc, object, attr);
  if (a < 0) return -1;
  hid_t ftype = H5Aget_type(a);
  H5T_class_t cls = H5Tget_class(ftype);
  hid_t space = H5Aget_space(a);
  hssize_t count = H5Sget_simple_extent_npoints(space);
  int rc = -1;
  if (cls != want_class && !(want_class == H5T_FLOAT && cls == H5T_INTEGER)) {
    error_set("%s: attribute %s of %s is not %s", h5io_file_name(loc, file_name, sizeof file_name), attr, object,
              want_class == H5T_INTEGER ? "an integer" : "a number");
  } else if (count != 1) {
    error_set("%s: attribute %s of %s holds %lld values, one expected",
              h5io_file_name(loc, file_name, sizeof file_name), attr, object, (long long)count);
  } else if (H5Aread(a, mtype, out) < 0) {
    error_set("%s: cannot read attribute %s of %s", h5io_file_name(loc, file_name, sizeof file_name), attr, object);
  } else {
    rc = 0;
  }
  H5Sclose(space);
  H5Tclose(ftype);
  H5Aclose(a);
  return rc;
}

int h5io_attr_read_int64(hid_t loc, const char *object, const char *attr, int64_t *out) {
  return h5io_attr_read_number(loc, object, attr, H5T_INTEGER, H5T_NATIVE_INT64, out);
}

int h5io_attr_read_double(hid_t loc, const char *object, const char *attr, double *out) {
  return h5io_attr_read_number(loc, object, attr, H5T_FLOAT, H5T_NATIVE_DOUBLE, out);
}
