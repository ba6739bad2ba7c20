// common/json_writer.c: see json_writer.h.
#include "common/json_writer.h"

#include <math.h>

#include "common/check.h"
#include "common/text.h"

void json_init(JsonWriter *w, FILE *out) { *w = (JsonWriter){.out = out, .depth = 0}; }

static void indent(JsonWriter *w) {
  fputc('\n', w->out);
  for (int i = 0; i < w->depth; i++) fputs("  ", w->out);
}

// Before any value: the comma and line break of an array member, or nothing after a key.
static void before_value(JsonWriter *w) {
  if (w->depth == 0) return;
  if (w->is_object[w->depth - 1]) {
    CHECK(w->key_pending, "json: a value inside an object needs a key first");
    w->key_pending = false;
    return;
  }
  if (!w->first[w->depth - 1]) fputc(',', w->out);
  w->first[w->depth - 1] = false;
  indent(w);
}

static void begin(JsonWriter *w, bool object) {
  before_value(w);
  CHECK(w->depth < JSON_DEPTH_MAX, "json: nesting deeper than JSON_DEPTH_MAX");
  fputc(object ? '{' : '[', w->out);
  w->first[w->depth] = true;
  w->is_object[w->depth] = object;
  w->depth++;
}

static void end(JsonWriter *w, bool object) {
  CHECK(w->depth > 0 && w->is_object[w->depth - 1] == object && !w->key_pending, "json: unbalanced end");
  bool empty = w->first[w->depth - 1];
  w->depth--;
  if (!empty) indent(w);
  fputc(object ? '}' : ']', w->out);
}

void json_object_begin(JsonWriter *w) { begin(w, true); }
void json_object_end(JsonWriter *w) { end(w, true); }
void json_array_begin(JsonWriter *w) { begin(w, false); }
void json_array_end(JsonWriter *w) { end(w, false); }

// Strings from files (a data file's source, a checkpoint's build text) may hold any bytes: each byte
// that does not begin well-formed UTF-8 is written as U+FFFD, so the document stays valid JSON.
static void write_string(FILE *out, const char *s) {
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p >= 0x80) {
      int n = text_utf8_length(p);
      if (n == 0) {
        fputs("\\ufffd", out);
      } else {
        fwrite(p, 1, (size_t)n, out);
        p += n - 1;
      }
      continue;
    }
    switch (*p) {
      case '"':
        fputs("\\\"", out);
        break;
      case '\\':
        fputs("\\\\", out);
        break;
      case '\n':
        fputs("\\n", out);
        break;
      case '\r':
        fputs("\\r", out);
        break;
      case '\t':
        fputs("\\t", out);
        break;
      default:
        if (*p < 0x20)
          fprintf(out, "\\u%04x", *p);
        else
          fputc(*p, out);
    }
  }
  fputc('"', out);
}

void json_key(JsonWriter *w, const char *key) {
  CHECK(w->depth > 0 && w->is_object[w->depth - 1] && !w->key_pending, "json: a key outside an object");
  if (!w->first[w->depth - 1]) fputc(',', w->out);
  w->first[w->depth - 1] = false;
  indent(w);
  write_string(w->out, key);
  fputs(": ", w->out);
  w->key_pending = true;
}

void json_string(JsonWriter *w, const char *value) {
  before_value(w);
  if (value)
    write_string(w->out, value);
  else
    fputs("null", w->out);
}

void json_number(JsonWriter *w, double value) {
  before_value(w);
  if (isfinite(value))
    fprintf(w->out, "%.17g", value);
  else
    fputs("null", w->out);
}

void json_int(JsonWriter *w, int64_t value) {
  before_value(w);
  fprintf(w->out, "%lld", (long long)value);
}

void json_bool(JsonWriter *w, bool value) {
  before_value(w);
  fputs(value ? "true" : "false", w->out);
}

void json_null(JsonWriter *w) {
  before_value(w);
  fputs("null", w->out);
}

void json_kv_string(JsonWriter *w, const char *key, const char *value) {
  json_key(w, key);
  json_string(w, value);
}
void json_kv_number(JsonWriter *w, const char *key, double value) {
  json_key(w, key);
  json_number(w, value);
}
void json_kv_int(JsonWriter *w, const char *key, int64_t value) {
  json_key(w, key);
  json_int(w, value);
}
void json_kv_bool(JsonWriter *w, const char *key, bool value) {
  json_key(w, key);
  json_bool(w, value);
}

void json_finish(JsonWriter *w) {
  CHECK(w->depth == 0 && !w->key_pending, "json: levels left open");
  fputc('\n', w->out);
}
