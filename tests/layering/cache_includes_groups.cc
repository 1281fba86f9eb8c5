// Compiles: the cache layer may include the groups layer below it and its
// own public headers (the control for the tests that must not compile).
#include "groups/group_manager.h"
#include "hkv/cache_config.h"

int main() { return 0; }
