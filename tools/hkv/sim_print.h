// Text and CSV of `hkv simulate` and `hkv compare` (with --config,
// --geometry or --vary): the library's reports (hkv/sim_report.h), one
// column or row per configuration; their JSON is the library's.
#pragma once

#include <span>

#include "hkv/sim_report.h"

namespace hkv::cli {

// A table of every report's rows, one column per report.
void PrintText(std::span<const SimReport> reports);

// What the hit ratio counts, and how this run reached it (one line).
void PrintHitRatioMeaning(const ExperimentOptions& options);

// A header of the rows' keys, then one row per report.
void PrintCsv(std::span<const SimReport> reports);

// Open loop: the offered load against what the modelled engine served;
// a warning on stderr when the queue kept growing (the JSON says so too).
void PrintLoad(const SimReport& report);

}  // namespace hkv::cli
