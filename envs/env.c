// envs/env.c: the registry of env kinds (see env.h). A new kind adds one line to `kinds`.
#include "envs/env.h"

#include <string.h>

#include "common/error.h"
#include "envs/cartpole.h"
#include "envs/trading_env.h"

static const EnvKind *const kinds[] = {
    &cartpole_kind,
    &trading_kind,
    &synthetic_kind,
};

enum { KIND_COUNT = (int)(sizeof kinds / sizeof kinds[0]) };

int env_kind_count(void) { return KIND_COUNT; }

const EnvKind *env_kind_at(int index) { return index >= 0 && index < KIND_COUNT ? kinds[index] : NULL; }

const EnvKind *env_kind_find(const char *name) {
  for (int i = 0; i < KIND_COUNT; i++)
    if (name && strcmp(kinds[i]->name, name) == 0) return kinds[i];
  char allowed[256] = "";
  for (int i = 0; i < KIND_COUNT; i++) {
    if (i > 0) strncat(allowed, ", ", sizeof allowed - strlen(allowed) - 1);
    strncat(allowed, kinds[i]->name, sizeof allowed - strlen(allowed) - 1);
  }
  error_set("unknown env '%s' (allowed: %s)", name ? name : "(null)", allowed);
  return NULL;
}
