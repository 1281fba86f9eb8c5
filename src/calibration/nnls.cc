#include "calibration/nnls.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "check.h"

namespace hkv::internal {
namespace {

// Solves the normal equations of the columns in `mask` by Gaussian
// elimination with partial pivoting; std::nullopt when they are singular.
std::optional<std::vector<double>> SolveSubset(const Matrix& a,
                                               const std::vector<double>& b,
                                               std::uint32_t mask) {
  std::vector<std::size_t> cols;
  for (std::size_t j = 0; j < a[0].size(); ++j) {
    if (mask & (1u << j)) cols.push_back(j);
  }
  const std::size_t k = cols.size();
  Matrix m(k, std::vector<double>(k + 1, 0.0));
  for (std::size_t r = 0; r < a.size(); ++r) {
    for (std::size_t p = 0; p < k; ++p) {
      for (std::size_t q = 0; q < k; ++q) {
        m[p][q] += a[r][cols[p]] * a[r][cols[q]];
      }
      m[p][k] += a[r][cols[p]] * b[r];
    }
  }
  for (std::size_t p = 0; p < k; ++p) {
    std::size_t best = p;
    for (std::size_t q = p + 1; q < k; ++q) {
      if (std::abs(m[q][p]) > std::abs(m[best][p])) best = q;
    }
    if (std::abs(m[best][p]) < 1e-12) return std::nullopt;
    std::swap(m[p], m[best]);
    for (std::size_t q = 0; q < k; ++q) {
      if (q == p) continue;
      const double f = m[q][p] / m[p][p];
      for (std::size_t c = p; c <= k; ++c) m[q][c] -= f * m[p][c];
    }
  }
  std::vector<double> x(a[0].size(), 0.0);
  for (std::size_t p = 0; p < k; ++p) x[cols[p]] = m[p][k] / m[p][p];
  return x;
}

double Residual(const Matrix& a, const std::vector<double>& b,
                const std::vector<double>& x) {
  double sum = 0.0;
  for (std::size_t r = 0; r < a.size(); ++r) {
    double v = -b[r];
    for (std::size_t j = 0; j < x.size(); ++j) v += a[r][j] * x[j];
    sum += v * v;
  }
  return sum;
}

}  // namespace

std::optional<std::vector<double>> SolveNonNegative(
    const Matrix& a, const std::vector<double>& b) {
  HKV_REQUIRE(!a.empty() && a.size() == b.size(), "one b per row");
  const std::size_t n = a[0].size();
  HKV_REQUIRE(n > 0 && n <= 16, "between 1 and 16 unknowns");
  std::vector<double> norm(n, 0.0);
  for (const std::vector<double>& row : a) {
    HKV_REQUIRE(row.size() == n, "rows of one length");
    for (std::size_t j = 0; j < n; ++j) norm[j] += row[j] * row[j];
  }
  Matrix scaled = a;
  for (std::vector<double>& row : scaled) {
    for (std::size_t j = 0; j < n; ++j) {
      row[j] = norm[j] > 0.0 ? row[j] / std::sqrt(norm[j]) : 0.0;
    }
  }
  std::optional<std::vector<double>> best;
  double best_residual = std::numeric_limits<double>::infinity();
  // Fewer unknowns first: of equally good sets the smallest is kept.
  std::vector<std::uint32_t> masks;
  for (std::uint32_t mask = 1; mask < (1u << n); ++mask) masks.push_back(mask);
  std::stable_sort(masks.begin(), masks.end(), [](auto x, auto y) {
    return std::popcount(x) < std::popcount(y);
  });
  for (std::uint32_t mask : masks) {
    std::optional<std::vector<double>> x = SolveSubset(scaled, b, mask);
    if (!x) continue;
    bool feasible = true;
    for (double v : *x) feasible = feasible && v >= 0.0;
    const double residual = feasible ? Residual(scaled, b, *x) : 0.0;
    if (feasible && residual < best_residual * (1.0 - 1e-9) - 1e-18) {
      best_residual = residual;
      best = std::move(x);
    }
  }
  if (!best) return std::nullopt;
  for (std::size_t j = 0; j < n; ++j) {
    (*best)[j] = norm[j] > 0.0 ? (*best)[j] / std::sqrt(norm[j]) : 0.0;
  }
  return best;
}

}  // namespace hkv::internal
