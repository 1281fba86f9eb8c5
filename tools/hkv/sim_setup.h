// The options of `hkv simulate` and `hkv compare`: the flags that fill the
// library's ExperimentOptions (hkv/experiment.h).
#pragma once

#include <CLI/CLI.hpp>

#include "hkv/experiment.h"

namespace hkv::cli {

using SimCommandOptions = ExperimentOptions;
using CompareCommandOptions = CompareOptions;

// Adds a flag per option of the library's table (hkv/sim_options.h) to
// `sub`, and --json and --csv, which exclude each other. A value out of its
// range or failing its check is a usage error naming the flag, the value
// and the range. Records the options given in `options.given` and points
// `options.data_dir` at the bundled data.
void AddSimOptions(CLI::App& sub, SimCommandOptions& options);

// Adds --free-order (prepend-uncached | append-all) setting `order`, with
// the help of the simulator's free_order, for every command that builds a
// cache.
void AddFreeOrderOption(CLI::App& sub, FreeOrder& order);

}  // namespace hkv::cli
