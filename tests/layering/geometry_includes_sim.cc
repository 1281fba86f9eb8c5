// Must not compile: the geometry layer including a header of the sim
// layer, which is above it.
#include "sim/sim_stats.h"
