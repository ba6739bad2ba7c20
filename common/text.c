// common/text.c: see text.h.
#include "common/text.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int text_utf8_length(const unsigned char *p) {
  unsigned c = p[0];
  int n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n <= 1) return n;
  unsigned cp = c & (0x7fu >> n);
  for (int k = 1; k < n; k++) {
    if ((p[k] & 0xc0) != 0x80) return 0;  // also stops at the terminating 0
    cp = cp << 6 | (p[k] & 0x3fu);
  }
  static const unsigned least[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

char *text_escape(const char *text, char *buf, size_t capacity) {
  return text_escape_cut(text, SIZE_MAX, buf, capacity);
}

char *text_escape_cut(const char *text, size_t max_chars, char *buf, size_t capacity) {
  if (capacity == 0) return buf;
  size_t n = 0;
  char piece[12];
  size_t chars = 0;
  for (const unsigned char *p = (const unsigned char *)text; *p; chars++) {
    if (chars == max_chars) {
      if (n + 3 < capacity) memcpy(buf + n, "...", 3), n += 3;
      break;
    }
    int len = text_utf8_length(p);
    bool c1 = len == 2 && p[0] == 0xC2 && p[1] <= 0x9F;
    size_t step;  // bytes of text consumed
    if ((len > 1 && !c1) || (len == 1 && *p >= 0x20 && *p != 0x7F && *p != '\\')) {
      memcpy(piece, p, (size_t)len);
      piece[len] = '\0';
      step = (size_t)len;
    } else if (c1) {
      snprintf(piece, sizeof piece, "\\x%02x\\x%02x", p[0], p[1]);
      step = 2;
    } else {
      const char *named = *p == '\n' ? "\\n" : *p == '\r' ? "\\r" : *p == '\t' ? "\\t" : *p == '\\' ? "\\\\" : NULL;
      if (named)
        snprintf(piece, sizeof piece, "%s", named);
      else
        snprintf(piece, sizeof piece, "\\x%02x", *p);
      step = 1;
    }
    size_t m = strlen(piece);
    if (n + m >= capacity) break;
    memcpy(buf + n, piece, m);
    n += m, p += step;
  }
  buf[n] = '\0';
  return buf;
}
