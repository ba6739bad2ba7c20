// common/h5io.h: typed HDF5 datasets and attributes, and atomic HDF5 file writes.
//
// Files are written under a temporary name and renamed on h5io_commit (atomic_file.h), so a
// crash or a failed import never leaves a partial file behind. Datasets are addressed by path
// ("bars/ts"); missing groups are created on write. Every reader checks the stored rank, shape
// and type class against what the caller expects and reports a mismatch as a user error (the
// file came from a user), naming the file and the dataset.
//
// All functions return 0 (or a valid hid_t) on success, and -1 (H5I_INVALID_HID) with the error
// message set (error.h) on failure. HDF5's own error stack printing is switched off: our
// messages say what went wrong in the user's terms.
// Depends on error.h, atomic_file.h and the HDF5 C library.
#ifndef PPO_COMMON_H5IO_H
#define PPO_COMMON_H5IO_H

#include <hdf5.h>
#include <stdbool.h>
#include <stdint.h>

#include "atomic_file.h"

typedef enum {
  H5IO_UINT8,
  H5IO_INT32,
  H5IO_UINT32,
  H5IO_INT64,
  H5IO_UINT64,
  H5IO_FLOAT32,
  H5IO_FLOAT64,
} H5ioType;

#define H5IO_MAX_RANK 4

typedef struct {
  hid_t file;                      // the open file (under tmp_path) to write into
  char path[ATOMIC_PATH_MAX];      // final name
  char tmp_path[ATOMIC_PATH_MAX];  // temporary name
} H5ioWriter;

// --- files ------------------------------------------------------------------------------------------
// Files are written in the HDF5 1.10 format (readable by HDF5 1.10 and later, h5py, h5dump), whose
// metadata carries checksums: the superblock (version 3), the object headers with their attributes,
// and the chunk indexes (fixed arrays; the 1.8 format's v1 B-trees had none, so a flipped bit there
// went unnoticed). Files in the earlier formats (shipped data and checkpoints written before) are
// read as they are.
int h5io_create(H5ioWriter *writer, const char *path);  // opens a new file under a temporary name
int h5io_commit(H5ioWriter *writer);                    // closes it and renames it to writer->path
void h5io_abort(H5ioWriter *writer);                    // closes and deletes it; path untouched
hid_t h5io_open_read(const char *path);                 // read-only; "PATH: no such file" / "not an HDF5 file"
void h5io_close(hid_t file);                            // closes a file from h5io_open_read (ignores invalid ids)
const char *h5io_type_name(H5ioType type);              // "float64", ...

// --- datasets ---------------------------------------------------------------------------------------
// Writes dims[0] x ... x dims[rank-1] elements of `type`. filters: a deflate level 1..9 (chunked,
// with the shuffle filter: market data) or 0 (stored contiguously), plus H5IO_CHECKSUM for a
// Fletcher32 checksum per chunk of about 256 KiB (every file the engine writes), which HDF5 checks
// on every read: h5io_read then reports the dataset as damaged instead of handing back altered
// numbers. Groups on the way are created keeping their attributes in their checksummed headers.
#define H5IO_CHECKSUM 0x100
int h5io_write(hid_t loc, const char *name, H5ioType type, int rank, const hsize_t *dims, const void *data,
               int filters);
bool h5io_exists(hid_t loc, const char *name);  // does the dataset or group exist (intermediate groups too)?
// Reads the shape of `name` into dims (at most max_rank entries). Returns the rank, or -1.
int h5io_shape(hid_t loc, const char *name, int max_rank, hsize_t *dims);
// Reads `name` into out, converting to `type`. Fails unless the stored rank and shape equal
// (rank, dims) and the stored type is of the same class (integer or float) as `type`.
int h5io_read(hid_t loc, const char *name, H5ioType type, int rank, const hsize_t *dims, void *out);

// --- attributes (on the object at `object`, e.g. "/" or "bars") -------------------------------------------
int h5io_attr_write_string(hid_t loc, const char *object, const char *attr, const char *value);
int h5io_attr_write_int64(hid_t loc, const char *object, const char *attr, int64_t value);
int h5io_attr_write_double(hid_t loc, const char *object, const char *attr, double value);
// One string (fixed- or variable-length) into out; a longer one than capacity - 1 bytes, or an
// array of strings, is refused with the error message.
int h5io_attr_read_string(hid_t loc, const char *object, const char *attr, char *out, size_t capacity);
int h5io_attr_read_int64(hid_t loc, const char *object, const char *attr, int64_t *out);
int h5io_attr_read_double(hid_t loc, const char *object, const char *attr, double *out);
bool h5io_attr_exists(hid_t loc, const char *object, const char *attr);
// 1: the attribute exists, 0: it (or object) does not, -1: the file is damaged there (message set).
int h5io_attr_find(hid_t loc, const char *object, const char *attr);
// A file damaged, cut short or not HDF5 at all is reported with error_mark_damaged (error.h).

#endif
