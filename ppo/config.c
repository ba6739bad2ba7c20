// ppo/config.c: loading, checking and printing the configuration (see config.h).
//
// inih splits "key = value" lines and strips inline comments; everything it does not report
// well is done in our reader (config_reader_next), which inih calls once per line:
//   - counts lines, so every error carries FILE:LINE (Debian's inih passes no line numbers);
//   - keeps the line's text, so a syntax error can quote it;
//   - recognises [section] lines itself, so an unknown section is reported even when empty;
//   - rejects lines longer than inih's buffer instead of letting inih split them in two, after
//     dropping a comment after the value (so comments may be of any length);
//   - strips leading whitespace, so an indented key is a key (inih would take it for a
//     continuation of the previous value);
//   - refuses "key: value", which inih takes for "key = value" (':' is its other delimiter, and
//     the library is built with it: no INI_ macro of ours can turn it off).
// Lines inih must not see (comments, headers, errors) are handed over as empty lines.
#include "ppo/config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/check.h"
#include "common/error.h"
#include "common/file_check.h"
#include "common/log.h"
#include "ppo/config_value.h"

#define CONFIG_LINE_MAX (INI_MAX_LINE - 2)  // characters per line, without the newline (inih's fgets keeps room for it)
#define CONFIG_FILE_MAX (1 << 20)           // a configuration is a page of text; refuse anything near this
#define VALUE_TEXT_MAX 512                  // a value as quoted in a message
#define ERRORS_RESERVE 96                   // room kept for the "... more errors" line

static const char *const config_sections[] = {"run",       "env", "ppo",  "policy",
                                              "normalize", "amp", "eval", "walk_forward"};
#define SECTION_COUNT ((int)(sizeof config_sections / sizeof *config_sections))

// --- error collection -------------------------------------------------------------------------

typedef struct {
  char text[ERROR_MESSAGE_MAX];
  size_t used;
  int count;    // errors kept in text
  int dropped;  // errors beyond CONFIG_ERRORS_MAX or the buffer
} ErrorList;

static void errors_add(ErrorList *errors, const char *fmt, ...) PPO_PRINTF(2, 3);
static void errors_add(ErrorList *errors, const char *fmt, ...) {
  char line[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(line, sizeof line, fmt, args);
  va_end(args);
  size_t n = strlen(line);
  if (errors->count >= CONFIG_ERRORS_MAX || errors->used + n + 2 > sizeof errors->text - ERRORS_RESERVE) {
    errors->dropped++;
    return;
  }
  errors->used += (size_t)snprintf(errors->text + errors->used, sizeof errors->text - errors->used, "%s%s",
                                   errors->count ? "\n" : "", line);
  errors->count++;
}

// When the list is full, counts the next error as errors_add would (dropped) and returns true, so
// that the caller skips the work of its message (the suggestion for an unknown key compares it with
// every key, and a 1 MiB file holds 16000 lines); false otherwise.
static bool errors_drop_if_full(ErrorList *errors) {
  if (errors->count < CONFIG_ERRORS_MAX) return false;
  errors->dropped++;
  return true;
}

static int errors_publish(const ErrorList *errors) {
  if (errors->count == 0) return 0;
  if (errors->dropped)
    error_set("%s\n... %d more error%s not shown", errors->text, errors->dropped, errors->dropped == 1 ? "" : "s");
  else
    error_set("%s", errors->text);
  return -1;
}

// Copies `text` for a message: control characters become \xNN, long text is cut with "...".
static char *quote_text(const char *text, size_t length, char *buf, size_t capacity) {
  size_t used = 0;
  for (size_t i = 0; i < length && used + 8 < capacity; i++) {
    unsigned char c = (unsigned char)text[i];
    if (iscntrl(c))
      used += (size_t)snprintf(buf + used, capacity - used, "\\x%02X", c);
    else
      buf[used++] = (char)c;
    if (i + 1 < length && used + 8 >= capacity) {
      memcpy(buf + used, "...", 3);
      used += 3;
    }
  }
  buf[used] = '\0';
  return buf;
}

// --- the loader's state -----------------------------------------------------------------------

typedef struct {
  Config *cfg;
  ErrorList errors;
  const char *source;  // the file name, as given, for messages
  int n_overrides;
  const char *const *overrides;
  bool stored;  // a checkpoint's stored text: warn only of rules a --set key is part of
  // reader state (one INI text)
  const char *data;
  size_t length, position;
  int line;
  const char *line_start;  // the current line, for quoting
  size_t line_length;
  char section[64];
  bool have_section, section_known;
} Loader;

// Where a key's value came from, as a message location: "FILE:LINE" or "command line: --set ARG".
static char *origin_where(const Loader *loader, int index, char *buf, size_t capacity) {
  ConfigOrigin o = loader->cfg->origin[index];
  if (o.kind == CONFIG_ORIGIN_FILE)
    snprintf(buf, capacity, "%s:%d", loader->source, o.line);
  else if (o.kind == CONFIG_ORIGIN_SET) {
    const char *arg = loader->overrides[o.line - 1];
    char shown[VALUE_TEXT_MAX];
    snprintf(buf, capacity, "command line: --set %s", quote_text(arg, strlen(arg), shown, sizeof shown));
  } else
    snprintf(buf, capacity, "default");
  return buf;
}

// --- suggestions --------------------------------------------------------------------------------

// Levenshtein distance, ignoring case (so "Gamma" finds "gamma").
static int edit_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  if (n > 63 || m > 63) return 1000;
  int row[64];
  for (size_t j = 0; j <= m; j++) row[j] = (int)j;
  for (size_t i = 1; i <= n; i++) {
    int diagonal = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= m; j++) {
      int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
      int best = diagonal + cost;
      if (row[j] + 1 < best) best = row[j] + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      diagonal = row[j];
      row[j] = best;
    }
  }
  return row[m];
}

static int suggestion_limit(const char *word) {
  int limit = ((int)strlen(word) + 1) / 3;  // 1 edit for "gama", 3 for "batchsize"; "foo" is not "ppo"
  return limit < 1 ? 1 : limit;
}

// The nearest known key: in `section` first; another section's key only when strictly closer.
// Returns the schema index, or -1 when nothing is close enough.
static int nearest_key(const char *section, const char *key) {
  int count;
  const ConfigKey *keys = config_schema(&count);
  int best_in = -1, best_out = -1, d_in = 1000, d_out = 1000;
  for (int i = 0; i < count; i++) {
    int d = edit_distance(key, keys[i].key);
    bool same = section && strcmp(section, keys[i].section) == 0;
    if (same && d < d_in) d_in = d, best_in = i;
    if (!same && d < d_out) d_out = d, best_out = i;
  }
  int limit = suggestion_limit(key);
  if (best_in >= 0 && d_in <= limit && d_in <= d_out) return best_in;
  if (best_out >= 0 && d_out <= limit) return best_out;
  return -1;
}

static char *unknown_key_reason(const char *section, const char *key, char *buf, size_t capacity) {
  int near = nearest_key(section, key);
  const ConfigKey *keys = config_schema(&(int){0});
  if (near < 0)
    snprintf(buf, capacity, "unknown key (ppo-train --help-config lists every key)");
  else if (section && strcmp(keys[near].section, section) == 0)
    snprintf(buf, capacity, "unknown key (did you mean '%s'?)", keys[near].key);
  else
    snprintf(buf, capacity, "unknown key (did you mean [%s] %s?)", keys[near].section, keys[near].key);
  return buf;
}

static bool section_known(const char *name) {
  for (int i = 0; i < SECTION_COUNT; i++)
    if (strcmp(config_sections[i], name) == 0) return true;
  return false;
}

static char *unknown_section_reason(const char *name, char *buf, size_t capacity) {
  int best = -1, best_d = 1000;
  for (int i = 0; i < SECTION_COUNT; i++) {
    int d = edit_distance(name, config_sections[i]);
    if (d < best_d) best_d = d, best = i;
  }
  size_t used = 0;
  if (best >= 0 && best_d <= suggestion_limit(name))
    used = (size_t)snprintf(buf, capacity, "unknown section (did you mean [%s]?) (allowed: ", config_sections[best]);
  else
    used = (size_t)snprintf(buf, capacity, "unknown section (allowed: ");
  for (int i = 0; i < SECTION_COUNT && used < capacity; i++)
    used += (size_t)snprintf(buf + used, capacity - used, "%s%s", i ? ", " : "", config_sections[i]);
  if (used < capacity) snprintf(buf + used, capacity - used, ")");
  return buf;
}

// --- assigning one key (file lines and --set alike) -------------------------------------------------

// Sets [section] key = value from `where` ("FILE:LINE" or "command line: --set ARG"). Errors go
// to the loader's list; the previous value stays.
static void loader_assign(Loader *loader, const char *where, const char *section, const char *key, const char *value,
                          ConfigOrigin origin) {
  char shown[VALUE_TEXT_MAX], reason[256];
  quote_text(value, strlen(value), shown, sizeof shown);
  int index = config_key_index(section, key);
  if (index < 0) {
    if (errors_drop_if_full(&loader->errors)) return;
    char key_shown[128];
    quote_text(key, strlen(key), key_shown, sizeof key_shown);
    errors_add(&loader->errors, "%s: [%s] %s = %s: %s", where, section, key_shown, shown,
               unknown_key_reason(section, key, reason, sizeof reason));
    return;
  }
  const ConfigKey *k = &config_schema(&(int){0})[index];
  char allowed[256];
  ConfigOrigin previous = loader->cfg->origin[index];
  if (previous.kind == origin.kind && origin.kind == CONFIG_ORIGIN_FILE) {
    errors_add(&loader->errors, "%s: [%s] %s = %s: duplicate key (first set at line %d)", where, section, key, shown,
               previous.line);
    return;
  }
  if (previous.kind == origin.kind && origin.kind == CONFIG_ORIGIN_SET) {
    const char *first = loader->overrides[previous.line - 1];
    char first_shown[VALUE_TEXT_MAX];  // its control characters escaped, as every quoted argument is
    errors_add(&loader->errors, "%s: [%s] %s = %s: given twice on the command line (first: --set %s)", where, section,
               key, shown, quote_text(first, strlen(first), first_shown, sizeof first_shown));
    return;
  }
  if (value[0] == '\0') {
    errors_add(&loader->errors, "%s: [%s] %s = : empty value (allowed: %s)", where, section, key,
               config_value_allowed(k, allowed, sizeof allowed));
    return;
  }
  if (config_value_parse(k, value, (char *)loader->cfg + k->offset, reason, sizeof reason) != 0) {
    // inih starts an inline comment only at a ';' after whitespace: '#' or a ';' right after the
    // value stay in it (a --set value has no comments at all)
    const bool in_file = origin.kind == CONFIG_ORIGIN_FILE;
    const char *hint = !in_file              ? ""
                       : strstr(value, " #") ? "; inline comments start with ' ;'"
                       : strchr(value, ';')  ? "; inline comments start with ' ;' (a ';' without a space before it "
                                               "is part of the value)"
                                             : "";
    errors_add(&loader->errors, "%s: [%s] %s = %s: %s (allowed: %s)%s", where, section, key, shown, reason,
               config_value_allowed(k, allowed, sizeof allowed), hint);
    return;
  }
  loader->cfg->origin[index] = origin;
}

// --- the INI reader ----------------------------------------------------------------------------

static void loader_error_here(Loader *loader, const char *what) {
  char shown[VALUE_TEXT_MAX];
  quote_text(loader->line_start, loader->line_length, shown, sizeof shown);
  errors_add(&loader->errors, "%s:%d: %s: \"%s\"", loader->source, loader->line, what, shown);
}

// inih's find_chars_or_comment: the first of `chars`, or a ';' after whitespace (an inline comment).
static const char *find_chars_or_comment(const char *s, const char *chars) {
  bool was_space = false;
  while (*s && !strchr(chars, *s) && !(was_space && *s == ';')) {
    was_space = isspace((unsigned char)*s);
    s++;
  }
  return s;
}

// The part of a (left-trimmed) line that counts toward CONFIG_LINE_MAX and goes on to inih: without a
// comment after it or trailing blanks. inih would drop the same comment (a ';' after whitespace;
// after a section header, any ';' or '#'), so what it parses does not change.
static size_t line_content_length(const char *start, size_t length) {
  if (start[0] == '[') {
    const char *close = memchr(start, ']', length);
    if (!close) return length;
    size_t after = (size_t)(close + 1 - start), rest = after;
    while (rest < length && isspace((unsigned char)start[rest])) rest++;
    return rest == length || start[rest] == ';' || start[rest] == '#' ? after : length;
  }
  size_t n = 0;
  while (n < length && !(start[n] == ';' && n > 0 && isspace((unsigned char)start[n - 1]))) n++;
  while (n > 0 && isspace((unsigned char)start[n - 1])) n--;
  return n;
}

// A "[name]" line: sets the section (reporting unknown ones) or reports a malformed header.
static void loader_section_line(Loader *loader, const char *start) {
  const char *close = strchr(start, ']');
  if (!close) {
    loader_error_here(loader, "syntax error: section header without ']'");
    return;
  }
  const char *rest = close + 1;
  while (isspace((unsigned char)*rest)) rest++;
  if (*rest && *rest != ';' && *rest != '#') {
    loader_error_here(loader, "syntax error: text after the section header");
    return;
  }
  const char *name = start + 1;
  while (name < close && isspace((unsigned char)*name)) name++;
  size_t n = (size_t)(close - name);
  while (n > 0 && isspace((unsigned char)name[n - 1])) n--;
  if (n >= sizeof loader->section) n = sizeof loader->section - 1;
  memcpy(loader->section, name, n);
  loader->section[n] = '\0';
  loader->have_section = true;
  loader->section_known = section_known(loader->section);
  if (!loader->section_known) {
    char shown[128], reason[256];
    quote_text(loader->section, n, shown, sizeof shown);
    errors_add(&loader->errors, "%s:%d: [%s]: %s", loader->source, loader->line, shown,
               unknown_section_reason(loader->section, reason, sizeof reason));
  }
}

// ini_reader: hands inih the next line, or an empty line for what we handle here.
static char *config_reader_next(char *out, int capacity, void *stream) {
  Loader *loader = stream;
  if (loader->position >= loader->length) return NULL;
  const char *start = loader->data + loader->position;
  const char *newline = memchr(start, '\n', loader->length - loader->position);
  size_t length = newline ? (size_t)(newline - start) : loader->length - loader->position;
  loader->position += length + (newline != NULL);
  if (length > 0 && start[length - 1] == '\r') length--;
  loader->line++;
  if (loader->line == 1 && length >= 3 && memcmp(start, "\xEF\xBB\xBF", 3) == 0) start += 3, length -= 3;
  loader->line_start = start;
  loader->line_length = length;
  out[0] = '\0';
  if (memchr(start, '\0', length)) {
    loader_error_here(loader, "syntax error: NUL byte in the line (not a text file?)");
    return out;
  }
  while (length > 0 && isspace((unsigned char)*start)) start++, length--;
  if (length == 0 || start[0] == ';' || start[0] == '#') return out;  // blank or a comment: any length
  length = line_content_length(start, length);                        // a comment after the value: any length too
  if (length > CONFIG_LINE_MAX) {
    errors_add(&loader->errors, "%s:%d: line too long (%zu characters; at most %d)", loader->source, loader->line,
               length, CONFIG_LINE_MAX);
    return out;
  }
  char line[INI_MAX_LINE];
  memcpy(line, start, length);
  line[length] = '\0';
  if (line[0] == '[') {
    loader_section_line(loader, line);
    return out;
  }
  const char *separator = find_chars_or_comment(line, "=:");
  if (*separator != '=' && *separator != ':') {
    loader_error_here(loader, "syntax error: expected '[section]', 'key = value' or a comment");
    return out;
  }
  if (*separator == ':') {  // inih's other delimiter: one spelling, the documented one (and ours: '=')
    const char *value = separator + 1, *value_end = find_chars_or_comment(value, "");
    while (value < value_end && isspace((unsigned char)*value)) value++;
    while (value_end > value && isspace((unsigned char)value_end[-1])) value_end--;
    size_t key_length = (size_t)(separator - line);
    while (key_length > 0 && isspace((unsigned char)line[key_length - 1])) key_length--;
    char what[3 * INI_MAX_LINE], key_shown[VALUE_TEXT_MAX], value_shown[VALUE_TEXT_MAX];
    snprintf(what, sizeof what, "syntax error: ':' between key and value (only '=' separates them: write %s = %s)",
             quote_text(line, key_length, key_shown, sizeof key_shown),
             quote_text(value, (size_t)(value_end - value), value_shown, sizeof value_shown));
    loader_error_here(loader, what);
    return out;
  }
  if (separator == line) {
    loader_error_here(loader, "syntax error: no key before '='");
    return out;
  }
  if ((int)length + 2 > capacity) return out;  // cannot happen: capacity is INI_MAX_LINE
  memcpy(out, line, length + 1);
  return out;
}

// ini_handler: one "key = value" line from config_reader_next.
static int config_handle_pair(void *user, const char *section, const char *name, const char *value) {
  Loader *loader = user;
  (void)section;  // ours (loader->section) is authoritative; inih never sees header lines
  char where[1024];
  snprintf(where, sizeof where, "%s:%d", loader->source, loader->line);
  if (!loader->have_section) {
    if (errors_drop_if_full(&loader->errors)) return 1;
    char shown[VALUE_TEXT_MAX], key_shown[128];
    quote_text(value, strlen(value), shown, sizeof shown);
    quote_text(name, strlen(name), key_shown, sizeof key_shown);
    int near = nearest_key(NULL, name);
    const ConfigKey *keys = config_schema(&(int){0});
    if (near >= 0 && strcmp(keys[near].key, name) == 0)
      errors_add(&loader->errors, "%s: %s = %s: key before any section header (it belongs under [%s])", where,
                 key_shown, shown, keys[near].section);
    else
      errors_add(&loader->errors, "%s: %s = %s: key before any section header", where, key_shown, shown);
    return 1;
  }
  if (!loader->section_known) return 1;  // reported once, at the header
  loader_assign(loader, where, loader->section, name, value, (ConfigOrigin){CONFIG_ORIGIN_FILE, loader->line});
  return 1;
}

static void loader_parse_text(Loader *loader, const char *text, size_t length) {
  loader->data = text;
  loader->length = length;
  loader->position = 0;
  loader->line = 0;
  loader->have_section = false;
  int before = loader->errors.count + loader->errors.dropped;
  int first_error = ini_parse_stream(config_reader_next, loader, config_handle_pair, loader);
  // Our reader filters every line inih would reject; this only fires if the two ever disagree.
  if (first_error != 0 && loader->errors.count + loader->errors.dropped == before)
    errors_add(&loader->errors, "%s:%d: syntax error", loader->source, first_error);
}

// --- --set overrides ----------------------------------------------------------------------------

static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
  return s;
}

// A "section.key=value" argument, split in place in copy: section, key and value trimmed. false
// when it has no '.' before its '='.
static bool split_override(char *copy, char **section, char **key, char **value) {
  char *equals = strchr(copy, '='), *dot = strchr(copy, '.');
  if (!equals || !dot || dot > equals) return false;
  *equals = '\0';
  *dot = '\0';
  *section = trim(copy), *key = trim(dot + 1), *value = trim(equals + 1);
  return true;
}

int config_override_index(const char *arg) {
  char copy[1024], *section, *key, *value;
  if (snprintf(copy, sizeof copy, "%s", arg) >= (int)sizeof copy || !split_override(copy, &section, &key, &value))
    return -1;
  return config_key_index(section, key);
}

static void loader_apply_override(Loader *loader, int position) {
  const char *arg = loader->overrides[position];
  char where[1024], shown[VALUE_TEXT_MAX];
  snprintf(where, sizeof where, "command line: --set %s", quote_text(arg, strlen(arg), shown, sizeof shown));
  char copy[1024];
  if (strlen(arg) >= sizeof copy) {
    errors_add(&loader->errors, "%s: longer than %zu characters", where, sizeof copy - 1);
    return;
  }
  strcpy(copy, arg);
  char *section, *key, *value;
  if (!split_override(copy, &section, &key, &value)) {
    errors_add(&loader->errors, "%s: expected section.key=value", where);
    return;
  }
  if (!section_known(section)) {
    char reason[256];
    quote_text(section, strlen(section), shown, sizeof shown);
    errors_add(&loader->errors, "%s: [%s]: %s", where, shown, unknown_section_reason(section, reason, sizeof reason));
    return;
  }
  loader_assign(loader, where, section, key, value, (ConfigOrigin){CONFIG_ORIGIN_SET, position + 1});
}

// --- cross-key checks ---------------------------------------------------------------------------

// The schema row of a "section.key" name (a key the checks below name: it exists).
static int dotted_key_index(const char *name) {
  const char *dot = strchr(name, '.');
  char section[32];
  snprintf(section, sizeof section, "%.*s", (int)(dot - name), name);
  return config_key_index(section, dot + 1);
}

// "[ppo] n_steps = 64 (set at x.ini:5)" for messages that name several keys.
static char *key_description(const Loader *loader, int index, char *buf, size_t capacity) {
  const ConfigKey *k = &config_schema(&(int){0})[index];
  char value[VALUE_TEXT_MAX], where[1024];
  config_value_text(loader->cfg, index, value, sizeof value);
  ConfigOrigin o = loader->cfg->origin[index];
  if (o.kind == CONFIG_ORIGIN_FILE)
    snprintf(where, sizeof where, "set at %s:%d", loader->source, o.line);
  else if (o.kind == CONFIG_ORIGIN_SET) {
    const char *arg = loader->overrides[o.line - 1];
    char shown[VALUE_TEXT_MAX];  // a newline the value's trimming dropped is still in the argument
    snprintf(where, sizeof where, "set by --set %s", quote_text(arg, strlen(arg), shown, sizeof shown));
  } else
    snprintf(where, sizeof where, "default");
  snprintf(buf, capacity, "[%s] %s = %s (%s)", k->section, k->key, value, where);
  return buf;
}

// The location to report a cross-key problem at: the most recently set of the keys involved
// (a --set beats the file, a later line beats an earlier one); "default" if none was set.
static char *latest_where(const Loader *loader, const char *const *keys, int n, char *buf, size_t capacity) {
  int latest = -1;
  long latest_rank = -1;
  for (int i = 0; i < n; i++) {
    int index = dotted_key_index(keys[i]);
    ConfigOrigin o = loader->cfg->origin[index];
    long rank = o.kind == CONFIG_ORIGIN_DEFAULT ? 0 : o.kind == CONFIG_ORIGIN_FILE ? o.line : 1000000L + o.line;
    if (rank > latest_rank) latest_rank = rank, latest = index;
  }
  return origin_where(loader, latest, buf, capacity);
}

typedef enum { CHECK_ERROR, CHECK_WARNING } CheckLevel;

// Reports a rule over keys[0..n) ("section.key"): "WHERE: DESC(k0)" RULE "DESC(k1)" JOINER "DESC(k2)" NOTE,
// each DESC naming the key, its value and where it was set.
static void cross_report(Loader *loader, CheckLevel level, const char *const *keys, int n, const char *rule,
                         const char *joiner, const char *note) {
  if (level == CHECK_WARNING && loader->stored) {  // the run that stored it was told already
    bool overridden = false;
    for (int i = 0; i < n; i++) overridden |= loader->cfg->origin[dotted_key_index(keys[i])].kind == CONFIG_ORIGIN_SET;
    if (!overridden) return;
  }
  char where[1024], message[4096];
  latest_where(loader, keys, n, where, sizeof where);
  size_t used = (size_t)snprintf(message, sizeof message, "%s: ", where);
  for (int i = 0; i < n && used < sizeof message; i++) {
    char description[2048];
    key_description(loader, dotted_key_index(keys[i]), description, sizeof description);
    used += (size_t)snprintf(message + used, sizeof message - used, "%s%s",
                             i == 0   ? ""
                             : i == 1 ? rule
                                      : joiner,
                             description);
  }
  if (note && used < sizeof message) snprintf(message + used, sizeof message - used, "%s", note);
  if (level == CHECK_ERROR)
    errors_add(&loader->errors, "%s", message);
  else
    log_warn("%s", message);
}

#define KEYS(...) \
  ((const char *const[]){__VA_ARGS__}), (int)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))

static void loader_check_dates(Loader *loader) {
  static const char *const names[] = {"env.train_start", "env.val_start", "env.test_start", "env.test_end"};
  const ConfigDate *dates[] = {&loader->cfg->env.train_start, &loader->cfg->env.val_start, &loader->cfg->env.test_start,
                               &loader->cfg->env.test_end};
  // Every pair of dates that are set, so "auto" in between still leaves the others checked.
  for (int i = 0; i < 4; i++) {
    for (int j = i + 1; j < 4; j++) {
      if (dates[i]->is_auto || dates[j]->is_auto) continue;
      bool inclusive_end = i == 2 && j == 3;  // test_end is the test split's last day: it may equal test_start
      bool ordered = inclusive_end ? dates[i]->seconds <= dates[j]->seconds : dates[i]->seconds < dates[j]->seconds;
      if (!ordered) {
        const char *const pair[] = {names[i], names[j]};
        cross_report(loader, CHECK_ERROR, pair, 2, inclusive_end ? " must not be after " : " must be before ", "",
                     NULL);
      }
    }
  }
}

// Whether a key holds a value other than its default (set in the file or by --set to something
// else; a checkpoint's stored configuration names every key, most at their defaults).
static bool differs_from_default(const Loader *loader, int index) {
  static Config defaults;
  static bool have_defaults = false;
  if (!have_defaults) config_set_defaults(&defaults), have_defaults = true;
  const ConfigKey *k = &config_schema(&(int){0})[index];
  return !config_value_equal(k, (const char *)loader->cfg + k->offset, (const char *)&defaults + k->offset);
}

// Keys given a value that this configuration never reads: said, so that a setting believed to
// act (a cost on CartPole, n_levels with discrete3, a loss scaler without fp16) is not silently
// ignored. Each names the key that makes it idle. Only values other than the default are told.
static void loader_check_idle(Loader *loader) {
  const Config *c = loader->cfg;
  const bool cartpole = c->env.type == CONFIG_ENV_CARTPOLE, continuous = c->env.action_mode == CONFIG_ACTION_CONTINUOUS;
  const struct {
    const char *key, *because;
    bool idle;
    const char *note;
  } rules[] = {
      {"env.n_levels", "env.action_mode", c->env.action_mode != CONFIG_ACTION_DISCRETE_K, ": only discrete_k reads it"},
      {"env.no_trade_band", "env.action_mode", !continuous,
       ": it applies to continuous targets; discrete levels trade when the level changes"},
      {"policy.log_std_init", cartpole ? "env.type" : "env.action_mode", !continuous || cartpole,
       cartpole ? ": CartPole's actions are discrete; only the Gaussian head has a log std"
                : ": only the Gaussian head has a log std"},
      {"env.dsr_eta", "env.reward", c->env.reward != CONFIG_REWARD_DSR && c->env.reward != CONFIG_REWARD_D3R,
       ": only the dsr and d3r rewards read it"},
      {"env.vol_target_annual", "env.reward", c->env.reward != CONFIG_REWARD_VOL_TARGET,
       ": only the vol_target reward reads it"},
      {"env.half_spread_bps", "env.use_data_spread", !c->env.use_data_spread.is_auto && c->env.use_data_spread.value,
       ": the fills pay the data's bid/ask spread"},
      {"normalize.clip_obs", "normalize.obs", !c->normalize.obs, ": it clips normalised observations"},
      {"normalize.clip_reward", "normalize.reward", !c->normalize.reward, ": it clips normalised rewards"},
      {"normalize.epsilon", "normalize.obs", !c->normalize.obs && !c->normalize.reward,
       " (and [normalize] reward = false): nothing is normalised"},
      {"amp.init_scale", "run.precision", c->run.precision != CONFIG_PRECISION_FP16, ": only fp16 has a loss scaler"},
      {"amp.growth_factor", "run.precision", c->run.precision != CONFIG_PRECISION_FP16,
       ": only fp16 has a loss scaler"},
      {"amp.backoff_factor", "run.precision", c->run.precision != CONFIG_PRECISION_FP16,
       ": only fp16 has a loss scaler"},
      {"amp.growth_interval", "run.precision", c->run.precision != CONFIG_PRECISION_FP16,
       ": only fp16 has a loss scaler"},
  };
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
    const char *key = rules[i].key;  // an [env] key the type never reads: told below, for the type
    if (rules[i].idle && !(strncmp(key, "env.", 4) == 0 && config_env_key_unread(c->env.type, key + 4)) &&
        differs_from_default(loader, dotted_key_index(key))) {
      const char *const pair[] = {key, rules[i].because};
      cross_report(loader, CHECK_WARNING, pair, 2, " has no effect with ", "", rules[i].note);
    }
  }
  // The [env] keys this type never reads (config_env_key_unread: on CartPole every market key).
  int count;
  const ConfigKey *keys = config_schema(&count);
  for (int i = 0; i < count; i++) {
    const char *unread = strcmp(keys[i].section, "env") == 0 ? config_env_key_unread(c->env.type, keys[i].key) : NULL;
    if (unread && differs_from_default(loader, i)) {
      char name[64], note[128];
      snprintf(name, sizeof name, "env.%s", keys[i].key);
      snprintf(note, sizeof note, ": %s", unread);
      const char *const pair[] = {name, "env.type"};
      cross_report(loader, CHECK_WARNING, pair, 2, " has no effect with ", "", note);
    }
  }
}

static void loader_check_cross(Loader *loader) {
  const Config *c = loader->cfg;
  char note[256];
  if (c->env.ema_fast >= c->env.ema_slow)
    cross_report(loader, CHECK_ERROR, KEYS("env.ema_fast", "env.ema_slow"), " must be less than ", "", NULL);
  loader_check_dates(loader);
  int64_t rollout = c->ppo.n_steps * c->env.n_envs;  // both bounded by the schema (1e8 x 4096): no int64 overflow
  if (rollout < 2)
    cross_report(loader, CHECK_ERROR, KEYS("ppo.n_steps", "env.n_envs"), " x ", "",
                 ": the rollout needs at least 2 transitions (SB3 asserts n_steps x n_envs > 1)");
  if (rollout > INT32_MAX)
    cross_report(loader, CHECK_ERROR, KEYS("ppo.n_steps", "env.n_envs"), " x ", "",
                 ": the rollout is indexed with 32-bit integers: at most 2147483647 transitions");
  int64_t minibatches =
      rollout > INT32_MAX ? 0 : c->ppo.n_epochs * ((rollout + c->ppo.batch_size - 1) / c->ppo.batch_size);
  if (minibatches > INT32_MAX) {
    snprintf(note, sizeof note,
             " in minibatches of [ppo] batch_size = %lld: %lld minibatch updates per iteration; at most 2147483647",
             (long long)c->ppo.batch_size, (long long)minibatches);
    cross_report(loader, CHECK_ERROR, KEYS("ppo.n_epochs", "ppo.n_steps", "env.n_envs"), " x ", " x ", note);
  }
  if (c->ppo.normalize_advantage && c->ppo.batch_size < 2)
    cross_report(loader, CHECK_ERROR, KEYS("ppo.batch_size", "ppo.normalize_advantage"), " must be at least 2 with ",
                 "", ": one sample has no standard deviation");
  snprintf(note, sizeof note, ": the rollout holds %lld transitions", (long long)rollout);
  if (c->ppo.batch_size > rollout) {
    cross_report(loader, CHECK_ERROR, KEYS("ppo.batch_size", "ppo.n_steps", "env.n_envs"),
                 " must not exceed the rollout ", " x ", note);
  } else if (rollout % c->ppo.batch_size != 0) {
    snprintf(note, sizeof note,
             ": the rollout of %lld transitions is not a multiple, so each epoch ends with a minibatch of %lld "
             "(SB3 warns the same)",
             (long long)rollout, (long long)(rollout % c->ppo.batch_size));
    cross_report(loader, CHECK_WARNING, KEYS("ppo.batch_size", "ppo.n_steps", "env.n_envs"), " does not divide ", " x ",
                 note);
  }
  if (c->env.position_onehot && c->env.action_mode == CONFIG_ACTION_CONTINUOUS)
    cross_report(loader, CHECK_ERROR, KEYS("env.position_onehot", "env.action_mode"), " needs discrete levels, not ",
                 "", NULL);
  if (c->eval.every > 0 && c->eval.split == CONFIG_SPLIT_TEST)
    cross_report(loader, CHECK_WARNING, KEYS("eval.split", "eval.every"), " with ", "",
                 ": best.h5 is then chosen on the test set; model selection belongs on val (TRADING_ENV.md section 2)");
  loader_check_idle(loader);
}

// --- public entry points -------------------------------------------------------------------------

void config_set_defaults(Config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  int count;
  const ConfigKey *keys = config_schema(&count);
  for (int i = 0; i < count; i++) {
    char reason[256];
    int status =
        config_value_parse(&keys[i], keys[i].default_text, (char *)cfg + keys[i].offset, reason, sizeof reason);
    // A default that does not parse is a defect in the table (every test run would catch it).
    if (status != 0) {
      char hint[512];
      snprintf(hint, sizeof hint, "fix the default of [%s] %s = %s in ppo/config_schema.c: %s", keys[i].section,
               keys[i].key, keys[i].default_text, reason);
      check_fail("default parses", __FILE__, __LINE__, hint, 0);
    }
    cfg->origin[i] = (ConfigOrigin){CONFIG_ORIGIN_DEFAULT, 0};
  }
}

// Keeps the tail of a long name, so "; FILE:LINE" comments stay short enough for one INI line.
static void set_source(Config *cfg, const char *name) {
  size_t n = strlen(name);
  if (n <= CONFIG_STRING_MAX)
    memcpy(cfg->source, name, n + 1);
  else
    snprintf(cfg->source, sizeof cfg->source, "...%s", name + n - (CONFIG_STRING_MAX - 3));
}

static int loader_finish(Loader *loader) {
  for (int i = 0; i < loader->n_overrides; i++) loader_apply_override(loader, i);
  // Cross-key rules on top of rejected values would only add noise.
  if (loader->errors.count + loader->errors.dropped == 0) loader_check_cross(loader);
  return errors_publish(&loader->errors);
}

static int load_text(Config *cfg, const char *text, size_t length, const char *source_name, int n_overrides,
                     const char *const *overrides, bool stored) {
  Loader loader = {
      .cfg = cfg, .source = source_name, .n_overrides = n_overrides, .overrides = overrides, .stored = stored};
  config_set_defaults(cfg);
  set_source(cfg, source_name);
  loader_parse_text(&loader, text, length);
  return loader_finish(&loader);
}

int config_load_text(Config *cfg, const char *text, size_t length, const char *source_name, int n_overrides,
                     const char *const *overrides) {
  return load_text(cfg, text, length, source_name, n_overrides, overrides, false);
}

int config_load_stored(Config *cfg, const char *text, size_t length, const char *source_name, int n_overrides,
                       const char *const *overrides) {
  return load_text(cfg, text, length, source_name, n_overrides, overrides, true);
}

int config_load(Config *cfg, const char *path, int n_overrides, const char *const *overrides) {
  if (!path) {
    Loader loader = {.cfg = cfg, .source = "", .n_overrides = n_overrides, .overrides = overrides};
    config_set_defaults(cfg);
    return loader_finish(&loader);
  }
  if (file_check_regular(path, "a configuration") != 0) return -1;
  FILE *file = fopen(path, "rb");
  if (!file) {
    error_set("%s: cannot read configuration: %s", path, strerror(errno));
    return -1;
  }
  char *text = malloc(CONFIG_FILE_MAX + 1);
  if (!text) {
    fclose(file);
    error_set("%s: cannot read configuration: out of memory", path);
    return -1;
  }
  size_t length = fread(text, 1, CONFIG_FILE_MAX + 1, file);
  int read_errno = ferror(file) ? errno : 0;
  fclose(file);
  int status;
  if (read_errno != 0) {
    error_set("%s: cannot read configuration: %s", path, strerror(read_errno));
    status = -1;
  } else if (length > CONFIG_FILE_MAX) {
    error_set("%s: cannot read configuration: larger than %d bytes", path, CONFIG_FILE_MAX);
    status = -1;
  } else {
    status = config_load_text(cfg, text, length, path, n_overrides, overrides);
  }
  free(text);
  return status;
}

int config_load_quietly(Config *cfg, const char *path) {
  LogLevel level = log_get_level();
  log_set_level(LOG_LEVEL_ERROR);
  int loaded = config_load(cfg, path, 0, NULL);
  log_set_level(level);
  return loaded;
}

char *config_value_text(const Config *cfg, int key_index, char *buf, size_t capacity) {
  const ConfigKey *k = &config_schema(&(int){0})[key_index];
  return config_value_format(k, (const char *)cfg + k->offset, buf, capacity);
}

bool config_values_equal(const Config *a, const Config *b) {
  int count;
  const ConfigKey *keys = config_schema(&count);
  for (int i = 0; i < count; i++)
    if (!config_value_equal(&keys[i], (const char *)a + keys[i].offset, (const char *)b + keys[i].offset)) return false;
  return true;
}

#define COMMENT_COLUMN 40

int config_write_ini(const Config *cfg, FILE *out) {
  int count;
  const ConfigKey *keys = config_schema(&count);
  fprintf(out, "; ppo-engine configuration, resolved: every key, marked with where its value came from.\n");
  const char *section = NULL;
  for (int i = 0; i < count; i++) {
    if (!section || strcmp(section, keys[i].section) != 0) {
      section = keys[i].section;
      fprintf(out, "\n[%s]\n", section);
    }
    char value[VALUE_TEXT_MAX], pair[VALUE_TEXT_MAX + 64], comment[CONFIG_STRING_MAX + 32];
    snprintf(pair, sizeof pair, "%s = %s", keys[i].key, config_value_text(cfg, i, value, sizeof value));
    ConfigOrigin o = cfg->origin[i];
    if (o.kind == CONFIG_ORIGIN_DEFAULT)
      snprintf(comment, sizeof comment, "; default");
    else if (o.kind == CONFIG_ORIGIN_SET)
      snprintf(comment, sizeof comment, "; --set");
    else
      snprintf(comment, sizeof comment, "; %s:%d", cfg->source, o.line);
    int width = (int)strlen(pair) < COMMENT_COLUMN ? COMMENT_COLUMN : (int)strlen(pair) + 1;
    // Every printed line must read back: fall back to shorter comments before passing inih's limit.
    if (width + (int)strlen(comment) > CONFIG_LINE_MAX) width = (int)strlen(pair) + 1;
    if (width + (int)strlen(comment) > CONFIG_LINE_MAX) snprintf(comment, sizeof comment, "; line %d", o.line);
    fprintf(out, "%-*s%s\n", width, pair, comment);
  }
  if (fflush(out) != 0 || ferror(out)) {
    int err = errno;  // kept for the caller (EPIPE: the reader went away)
    error_set("cannot write the configuration: %s", strerror(err));
    errno = err;
    return -1;
  }
  return 0;
}

void config_write_help(FILE *out) {
  int count;
  const ConfigKey *keys = config_schema(&count);
  fprintf(out,
          "Configuration keys: INI sections and keys, with type, default and allowed values.\n"
          "Set them in CONFIG.ini or with --set section.key=value; \"auto\" defaults are resolved\n"
          "per instrument from the data (hourly or daily bars, FX/gold or stocks).\n");
  const char *section = NULL;
  for (int i = 0; i < count; i++) {
    if (!section || strcmp(section, keys[i].section) != 0) {
      section = keys[i].section;
      fprintf(out, "\n[%s]\n", section);
    }
    char allowed[256];
    fprintf(out, "  %-24s %-13s default %-18s allowed: %s\n      %s\n", keys[i].key, config_type_name(keys[i].type),
            keys[i].default_text, config_value_allowed(&keys[i], allowed, sizeof allowed), keys[i].doc);
  }
}

// Markdown table cells: '|' would end the cell, so it is escaped.
static void markdown_cell(FILE *out, const char *text) {
  for (const char *c = text; *c; c++) {
    if (*c == '|') fputc('\\', out);
    fputc(*c, out);
  }
}

void config_write_markdown(FILE *out) {
  int count;
  const ConfigKey *keys = config_schema(&count);
  fprintf(out,
          "# Configuration reference\n\n"
          "Generated by `ppo-train --help-config=markdown` from the schema table in `ppo/config_schema.c`;\n"
          "a test fails when this file and the table differ. Set keys in the run's INI file, as `key = value`\n"
          "lines under `[section]` headers (only `=` separates a key from its value: `key: value` is refused),\n"
          "or with `--set section.key=value`. `auto` defaults are resolved per instrument from the data (hourly\n"
          "or daily bars, FX/gold or stocks); `none` switches an optional feature off. A comment line starts with\n"
          "`;` or `#`; a comment after a value starts with ` ;` (a space or tab, then `;`). `#` after a value\n"
          "does not start a comment: it is part of the value, as is a `;` right after a character, so a path\n"
          "(`run_dir`, `data`) keeps them and every other key refuses the value. Comments may be of any\n"
          "length: a section or key line holds at most %d characters, not counting its indentation, a comment\n"
          "after it or trailing blanks. A least value of 1.2e-38 marks a key used as a 32-bit float, where a\n"
          "positive value below FLT_MIN (1.17549435e-38) would be a denormal or 0.\n",
          CONFIG_LINE_MAX);
  const char *section = NULL;
  for (int i = 0; i < count; i++) {
    if (!section || strcmp(section, keys[i].section) != 0) {
      section = keys[i].section;
      fprintf(out, "\n## [%s]\n\n| key | type | default | allowed | description |\n| --- | --- | --- | --- | --- |\n",
              section);
    }
    char allowed[256];
    fprintf(out, "| `%s` | %s | `%s` | ", keys[i].key, config_type_name(keys[i].type), keys[i].default_text);
    markdown_cell(out, config_value_allowed(&keys[i], allowed, sizeof allowed));
    fputs(" | ", out);
    markdown_cell(out, keys[i].doc);
    fputs(" |\n", out);
  }
}

char *config_describe_key(const Config *cfg, const char *section, const char *key, char *buf, size_t capacity) {
  int index = config_key_index(section, key);
  CHECK(index >= 0, "config_describe_key: the key must be in the schema");
  char value[VALUE_TEXT_MAX];
  config_value_text(cfg, index, value, sizeof value);
  ConfigOrigin o = cfg->origin[index];
  if (o.kind == CONFIG_ORIGIN_FILE)
    snprintf(buf, capacity, "%s:%d: [%s] %s = %s", cfg->source, o.line, section, key, value);
  else if (o.kind == CONFIG_ORIGIN_SET)
    snprintf(buf, capacity, "command line: --set #%d: [%s] %s = %s", o.line, section, key, value);
  else
    snprintf(buf, capacity, "default: [%s] %s = %s", section, key, value);
  return buf;
}
