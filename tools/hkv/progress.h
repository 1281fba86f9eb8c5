// Progress of long simulator runs on stderr.
#pragma once

#include "hkv/experiment.h"

namespace hkv::cli {

// On a terminal, one line redrawn in place per run: a bar, requests done of
// the total, the time so far and an estimate of what remains; elsewhere (a
// pipe, a log file) a plain line per run at most every 10 s, and one when
// it ends. Nothing during the first second, so short runs stay silent, and
// nothing at all when `quiet`.
SimProgress StderrProgress(bool quiet);

}  // namespace hkv::cli
