// Must not compile with the CLI's include roots: the CLI (tools/hkv) sees
// the library's public headers only.
#include "engine/sim_stats.h"
