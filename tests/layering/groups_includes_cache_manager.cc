// Must not compile: the groups layer including the cache layer's public
// header; groups see only the small public headers of their own layer and
// below (hkv/group_spec.h, hkv/cache_hit.h, hkv/allocation.h, ...).
#include "hkv/cache_manager.h"
