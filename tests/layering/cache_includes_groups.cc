// Compiles: the cache layer may include the groups layer below it (the
// control for the tests that must not compile).
#include "groups/group_manager.h"

int main() { return 0; }
