// Non-negative least squares for the calibration's small fits.
#pragma once

#include <optional>
#include <vector>

namespace hkv::internal {

// Row-major matrix: rows[i][j].
using Matrix = std::vector<std::vector<double>>;

// The x >= 0 minimising |A x - b|^2, by trying every set of free
// (non-zero) unknowns: exact, and cheap for the dozen unknowns a cost model
// has (2^n small solves). Columns are scaled to unit norm first. Returns
// std::nullopt when no set gives a solution (every column zero).
// REQUIRES: every row has the same length n <= 16; b has one entry per row.
std::optional<std::vector<double>> SolveNonNegative(
    const Matrix& a, const std::vector<double>& b);

}  // namespace hkv::internal
