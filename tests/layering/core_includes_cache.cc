// Must not compile: the core layer including a header of the cache layer,
// which is above it (docs/design.md, layers; tests/CMakeLists.txt).
#include "cache/cache_core.h"
