// common/json_writer.h: a streaming JSON writer for reports (ppo-eval's report.json, benchmark
// results): objects, arrays, keys, strings (escaped per RFC 8259), numbers and booleans, pretty
// printed with two-space indents. Numbers are written with %.17g so they read back exactly; NaN and
// infinities, which JSON cannot express, are written as null (a metric that is undefined).
// The writer tracks nesting and commas; misuse (a value where a key is due, unbalanced ends) exits
// through common/check.h, since it is a programming error, not bad input.
// Depends on common/check.h.
#ifndef PPO_COMMON_JSON_WRITER_H
#define PPO_COMMON_JSON_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_DEPTH_MAX 32

typedef struct {
  FILE *out;
  int depth;
  bool first[JSON_DEPTH_MAX];      // no member written yet at this level
  bool is_object[JSON_DEPTH_MAX];  // object (keys) or array
  bool key_pending;                // a key was written; its value comes next
} JsonWriter;

void json_init(JsonWriter *w, FILE *out);
void json_object_begin(JsonWriter *w);
void json_object_end(JsonWriter *w);
void json_array_begin(JsonWriter *w);
void json_array_end(JsonWriter *w);
void json_key(JsonWriter *w, const char *key);
void json_string(JsonWriter *w, const char *value);  // NULL writes null
void json_number(JsonWriter *w, double value);       // NaN, +-inf: null
void json_int(JsonWriter *w, int64_t value);
void json_bool(JsonWriter *w, bool value);
void json_null(JsonWriter *w);
// key + value in one call, for objects.
void json_kv_string(JsonWriter *w, const char *key, const char *value);
void json_kv_number(JsonWriter *w, const char *key, double value);
void json_kv_int(JsonWriter *w, const char *key, int64_t value);
void json_kv_bool(JsonWriter *w, const char *key, bool value);
void json_finish(JsonWriter *w);  // checks everything was closed; writes the final newline

#endif
