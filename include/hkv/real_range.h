// A range of real numbers an option accepts: [min, max], or (min, max]
// when `min_excluded`, finite values only. The simulator's options
// (hkv/sim_options.h) and workload arguments state their ranges with it.
//
// Thread-safety: a value type.
//
// Example:
//   RealRange probability{.min = 0.0, .max = 1.0};
//   RealRange time_scale{.min = 0.0, .max = 1e12, .min_excluded = true};
#pragma once

namespace hkv {

struct RealRange {
  double min = 0.0;
  double max = 0.0;
  bool min_excluded = false;
};

}  // namespace hkv
