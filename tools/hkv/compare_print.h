// The text of `hkv compare`'s geometry comparison (hkv/comparison.h): the
// configurations side by side in blocks of four columns (100 columns at
// most), their groups, the sensitivity lines and the recommendation.
#pragma once
#include <span>

#include "hkv/comparison.h"

namespace hkv::cli {

void PrintComparison(const Comparison& comparison);

// `hkv compare --search`: the configurations ranked, one line each, and
// the recommendation.
void PrintSearch(const Comparison& comparison);

// One CSV row per configuration: the rows of the text, their keys as the
// header.
void PrintComparisonCsv(const Comparison& comparison);

// `hkv compare --sweep`: a row per configuration, the trace's hit ratio
// at each budget.
void PrintSweep(std::span<const BudgetSweepPoint> points);

}  // namespace hkv::cli
