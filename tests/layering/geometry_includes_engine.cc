// Must not compile: the geometry layer including a header of the engine
// layer (the simulator's), which is above it.
#include "engine/sim_stats.h"
