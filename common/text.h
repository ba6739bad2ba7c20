// common/text.h: text from files, shown safely. A data file's attributes or a checkpoint's strings
// may hold any bytes: a newline or an escape sequence (ESC [ ...) printed as it is would forge lines
// or drive the terminal, and bytes that are not UTF-8 make invalid JSON.
// Depends on nothing.
#ifndef PPO_COMMON_TEXT_H
#define PPO_COMMON_TEXT_H

#include <stddef.h>

// Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF): 1 for ASCII, 2 to 4, or 0 when the bytes there are not one.
int text_utf8_length(const unsigned char *p);

// text for a terminal or a log line: control characters (C0, DEL, and C1 U+0080 .. U+009F) become
// \n, \r, \t or \xHH, a byte that does not begin a UTF-8 character \xHH, a backslash \\ (so that
// an escape in the text cannot pass for one); any other UTF-8 character stays as it is. Written
// into buf (capacity bytes, always terminated; what does not fit is cut at a character); returns buf.
char *text_escape(const char *text, char *buf, size_t capacity);
// text_escape of the first max_chars characters (UTF-8 characters or stray bytes) of text, then
// "..." when more follows: a field of a data file quoted in a message, however long the field is.
// A capacity of 8 max_chars + 4 always holds it; a smaller one may cut earlier, without the dots.
char *text_escape_cut(const char *text, size_t max_chars, char *buf, size_t capacity);

#endif
