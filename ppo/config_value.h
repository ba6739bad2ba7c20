// ppo/config_value.h: text <-> value for each schema type (private to ppo/config*.c).
//
// Parsing is strict (whole text, finite numbers, exact integers) and writes the destination only
// on success, so a rejected value leaves the previous one in place. Formatting writes the text
// that parses back to the identical value (config_write_ini's round trip).
// Depends on config.h and common/time_utc.h.
#ifndef PPO_CONFIG_VALUE_H
#define PPO_CONFIG_VALUE_H

#include <stdbool.h>
#include <stddef.h>

#include "ppo/config.h"

// Parses `text` (already trimmed, non-empty) for `key` into `dst`. Returns 0, or -1 with the
// reason ("not an integer", "out of range") in `reason`; the caller adds the allowed values.
int config_value_parse(const ConfigKey *key, const char *text, void *dst, char *reason, size_t capacity);
char *config_value_format(const ConfigKey *key, const void *src, char *buf, size_t capacity);  // returns buf
char *config_value_allowed(const ConfigKey *key, char *buf, size_t capacity);  // "0 <= value <= 1", "auto, cpu, cuda"
bool config_value_equal(const ConfigKey *key, const void *a, const void *b);   // exact, type-aware
const char *config_type_name(ConfigType type);                                 // "int", "real or auto", ...

#endif
