// Must be refused by no_parent_includes.py: a layer reaching another's
// folder by a relative path, past its include roots.
#include "../sim/nnls.h"
