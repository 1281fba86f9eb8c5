#include "quiet_cells.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace hkv::python {
namespace {

// Far outside any token count: a side of a range that binds nothing.
constexpr std::int64_t kFarBelow = -(std::int64_t{1} << 62);
constexpr std::int64_t kFarAbove = std::int64_t{1} << 62;

// x mod m in [0, m), as Python's % gives it.
std::int64_t Residue(std::int64_t x, std::int64_t m) {
  const std::int64_t r = x % m;
  return r < 0 ? r + m : r;
}

}  // namespace

QuietCells::QuietCells(const std::vector<GroupSpec>& groups,
                       const std::vector<std::int64_t>& block_sizes,
                       std::int64_t max_model_len)
    : max_model_len_(max_model_len) {
  if (groups.size() != block_sizes.size()) {
    throw UsageError("QuietCells: " + std::to_string(groups.size()) +
                     " groups but " + std::to_string(block_sizes.size()) +
                     " block sizes");
  }
  // By count: period -> offsets.
  std::array<std::map<std::int64_t, std::set<std::int64_t>>, 3> offsets;
  const auto add = [&offsets](QuietCount count, std::int64_t period,
                              std::int64_t offset) {
    if (period <= 0) {
      throw UsageError("QuietCells: a period of " + std::to_string(period) +
                       " tokens (block sizes and chunks are at least 1)");
    }
    offsets[static_cast<std::size_t>(count)][period].insert(
        Residue(offset, period));
  };
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const GroupSpec& group = groups[g];
    const std::int64_t b = block_sizes[g];
    add(QuietCount::kMain, b, 1);
    add(QuietCount::kCached, b, 0);
    if (group.kind == GroupKind::kSlidingWindow) {
      add(QuietCount::kComputed, b, group.sliding_window - 1);
    } else if (group.kind == GroupKind::kChunkedLocal) {
      add(QuietCount::kComputed, group.chunk_size, 0);
    } else if (group.kind == GroupKind::kRecurrent) {
      add(QuietCount::kComputed, b, group.speculative_blocks + 1);
    }
  }
  for (std::size_t count = 0; count < offsets.size(); ++count) {
    for (const auto& [period, found] : offsets[count]) {
      Period p{.period = period, .offsets = {*found.rbegin() - period}};
      p.offsets.insert(p.offsets.end(), found.begin(), found.end());
      p.offsets.push_back(*found.begin() + period);
      periods_[count].push_back(std::move(p));
    }
  }
}

std::pair<std::int64_t, std::int64_t> QuietCells::CellIn(const Periods& periods,
                                                         std::int64_t x) {
  std::int64_t lo = kFarBelow;
  std::int64_t hi = kFarAbove;
  for (const Period& p : periods) {
    const std::int64_t residue = Residue(x, p.period);
    const auto above =
        std::upper_bound(p.offsets.begin(), p.offsets.end(), residue);
    lo = std::max(lo, x - residue + *(above - 1));
    hi = std::min(hi, x - residue + *above - 1);
  }
  return {lo, hi};
}

std::pair<std::int64_t, std::int64_t> QuietCells::Cell(QuietCount count,
                                                       std::int64_t x) const {
  return CellIn(periods_[static_cast<std::size_t>(count)], x);
}

py::tuple QuietRecord::AsTuple() const {
  return py::make_tuple(epoch, lookahead, no_commit, computed_lo, computed_hi,
                        main_lo, main_hi, commit_lo, commit_hi);
}

QuietRecord QuietRecord::FromTuple(py::handle tuple) {
  if (!PyTuple_Check(tuple.ptr()) || PyTuple_GET_SIZE(tuple.ptr()) != 9 ||
      !PyBool_Check(PyTuple_GET_ITEM(tuple.ptr(), 2))) {
    throw UsageError(
        "a quiet record is a tuple of 9: (epoch, lookahead, "
        "commit is None, then six token counts), got " +
        ShortRepr(tuple));
  }
  const auto item = [&tuple](Py_ssize_t i) {
    return Convert<std::int64_t>(PyTuple_GET_ITEM(tuple.ptr(), i),
                                 "a quiet record's item " + std::to_string(i));
  };
  return {.epoch = item(0),
          .lookahead = item(1),
          .no_commit = PyTuple_GET_ITEM(tuple.ptr(), 2) == Py_True,
          .computed_lo = item(3),
          .computed_hi = item(4),
          .main_lo = item(5),
          .main_hi = item(6),
          .commit_lo = item(7),
          .commit_hi = item(8)};
}

std::optional<QuietRecord> QuietCells::Record(
    std::int64_t epoch, std::int64_t total_computed,
    std::int64_t num_new_tokens, std::int64_t lookahead,
    std::optional<std::int64_t> commit, std::int64_t num_prompt_tokens) const {
  if (total_computed < num_prompt_tokens) return std::nullopt;
  const std::int64_t main = total_computed + num_new_tokens;
  const auto cell = Cell(QuietCount::kMain, main);
  auto [main_lo, main_hi] = cell;
  // Cells partition the counts: a slot count in the main count's cell has
  // that cell (a decode step's mostly do).
  const std::int64_t slots = std::min(main + lookahead, max_model_len_);
  const auto [slots_lo, slots_hi] = cell.first <= slots && slots <= cell.second
                                        ? cell
                                        : Cell(QuietCount::kMain, slots);
  main_lo = std::max(main_lo, slots_lo - lookahead);
  if (slots_hi < max_model_len_) {  // else every main from slots_lo caps
    main_hi = std::min(main_hi, slots_hi - lookahead);
  }
  const auto computed = Cell(QuietCount::kComputed, total_computed);
  const auto committed = commit ? Cell(QuietCount::kCached, *commit)
                                : std::pair{kFarBelow, kFarAbove};
  return QuietRecord{
      .epoch = epoch,
      .lookahead = lookahead,
      .no_commit = !commit.has_value(),
      .computed_lo = std::max(computed.first, num_prompt_tokens),
      .computed_hi = computed.second,
      .main_lo = std::max(main_lo, num_prompt_tokens),
      .main_hi = main_hi,
      .commit_lo = commit ? std::max(committed.first, num_prompt_tokens)
                          : committed.first,
      .commit_hi = committed.second};
}

void BindQuietCells(py::module_& m) {
  py::enum_<QuietCount>(m, "QuietCount",
                        "The token counts an allocation of a running "
                        "request reads.")
      .value("COMPUTED", QuietCount::kComputed)
      .value("MAIN", QuietCount::kMain)
      .value("CACHED", QuietCount::kCached);
  py::class_<QuietCells>(m, "QuietCells",
                         "hkv.vllm's decode fast path: the token counts "
                         "across which an allocation changes nothing.")
      .def(py::init<const std::vector<GroupSpec>&,
                    const std::vector<std::int64_t>&, std::int64_t>(),
           py::arg("groups"), py::arg("block_sizes"), py::arg("max_model_len"))
      .def("cell", &QuietCells::Cell, py::arg("count"), py::arg("x"),
           "(lo, hi): the counts of kind count (QuietCount) around x that "
           "no group tells apart from it; a side no boundary binds is "
           "+-2**62.")
      .def(
          "record",
          [](const QuietCells& cells, std::int64_t epoch,
             std::int64_t total_computed, std::int64_t num_new_tokens,
             std::int64_t lookahead, std::optional<std::int64_t> commit,
             std::int64_t num_prompt_tokens) -> py::object {
            const std::optional<QuietRecord> record =
                cells.Record(epoch, total_computed, num_new_tokens, lookahead,
                             commit, num_prompt_tokens);
            if (!record) return py::none();
            return record->AsTuple();
          },
          py::arg("epoch"), py::arg("total_computed"),
          py::arg("num_new_tokens"), py::arg("num_lookahead_tokens"),
          py::arg("commit"), py::arg("num_prompt_tokens"),
          "(epoch, lookahead, commit is None, computed lo, hi, main lo, hi, "
          "commit lo, hi): the ranges over which the next allocation "
          "changes nothing; None while the computed count is below the "
          "prompt.");
}

}  // namespace hkv::python
