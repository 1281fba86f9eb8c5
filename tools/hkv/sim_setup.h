// The options of `hkv simulate` and `hkv compare`: the flags that fill the
// library's ExperimentOptions (hkv/experiment.h).
#pragma once

#include <CLI/CLI.hpp>

#include "hkv/experiment.h"

namespace hkv::cli {

using SimCommandOptions = ExperimentOptions;
using CompareCommandOptions = CompareOptions;

// Adds the shared options to `sub`; each numeric flag refuses values out of
// its range (a usage error naming the flag, the value and the range), and
// --json and --csv exclude each other. Records the flags given in
// `options.given` and points `options.data_dir` at the bundled data.
void AddSimOptions(CLI::App& sub, SimCommandOptions& options);

// Adds --free-order (prepend-uncached | append-all) setting `order`, for
// every command that builds a cache.
void AddFreeOrderOption(CLI::App& sub, FreeOrder& order);

}  // namespace hkv::cli
