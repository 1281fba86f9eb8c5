// Shared pieces of the hkv Python module (_hkv): conversions of hkv's strong
// ids and block hashes to Python ints and bytes, the exception for Result
// errors, and one Bind function per concept (one .cc each).
//
// The bindings map the public C++ API 1:1 and hold no logic; the engine
// scheduler's vocabulary (KVCacheManager, Request) is Python in python/hkv/.
#pragma once

#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hkv/result.h"
#include "hkv/types.h"

namespace hkv::python {

namespace py = pybind11;

// A Result's Error, raised in Python as hkv.Error (a ValueError).
class ResultError : public std::runtime_error {
 public:
  explicit ResultError(const Error& error)
      : std::runtime_error(error.message), code_(error.code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

// Raw bytes (digests, embeddings) as Python bytes.
inline py::bytes AsBytes(std::span<const std::uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// The value of `result`, or throws its error as ResultError.
template <typename T>
T ValueOrThrow(Result<T> result) {
  if (!result) throw ResultError(result.error());
  if constexpr (!std::is_void_v<T>) return std::move(*result);
}

// What a conversion to T accepts, for errors: "an int in [0, 4294967295]",
// "a float", "a str or None", ...
template <typename T>
struct Accepts {
  static std::string Text() {
    if constexpr (std::is_same_v<T, bool>) {
      return "a bool";
    } else if constexpr (std::is_integral_v<T>) {
      return "an int in [" + std::to_string(std::numeric_limits<T>::min()) +
             ", " + std::to_string(std::numeric_limits<T>::max()) + "]";
    } else if constexpr (std::is_floating_point_v<T>) {
      return "a float";
    } else if constexpr (std::is_same_v<T, std::string>) {
      return "a str";
    } else {
      const std::string name = py::type_id<T>();  // "hkv::KeyFunction"
      return "a " + name.substr(name.rfind(':') + 1);
    }
  }
};
template <typename T>
struct Accepts<std::optional<T>> {
  static std::string Text() { return Accepts<T>::Text() + " or None"; }
};
template <typename T>
struct Accepts<T*> {
  static std::string Text() {
    return Accepts<std::remove_cv_t<T>>::Text() + " or None";
  }
};
template <typename T>
struct Accepts<std::vector<T>> {
  static std::string Text() { return "a list of " + Accepts<T>::Text(); }
};

// The repr of `value`, cut to 80 characters.
inline std::string ShortRepr(py::handle value) {
  std::string text = py::repr(value).cast<std::string>();
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

// `value` converted to T, or UsageError naming `what` (the argument, e.g.
// "allocate(): num_lookahead_tokens"), what it accepts and what it got,
// instead of pybind11's "Unable to cast Python instance".
template <typename T>
[[noreturn]] void RejectConversion(py::handle value, const std::string& what) {
  throw UsageError(what + " must be " + Accepts<T>::Text() + ", got " +
                   ShortRepr(value));
}
template <typename T>
T Convert(py::handle value, const std::string& what) {
  try {
    return value.cast<T>();
  } catch (const py::cast_error&) {
    RejectConversion<T>(value, what);
  }
}

// Keys an engine computed, from `keys[start:]` (a list of bytes, one per
// hash unit, as the engine's request.block_hashes holds them), each of 1 to
// 32 bytes, zero-padded. UsageError naming `what` and the first that is not.
std::vector<BlockHash> CallerKeys(const py::handle& keys, std::size_t start,
                                  const char* what);
// The length of `keys`, a list or tuple (else UsageError naming `what`).
std::size_t NumCallerKeys(const py::handle& keys, const char* what);
// CallerKeys of items[first, first + out.size()) into `out`.
void ConvertKeys(PyObject* const* items, std::size_t first,
                 std::span<BlockHash> out, const char* what);

void BindErrors(py::module_& m);
void BindLimits(py::module_& m);
void BindRequest(py::module_& m);
void BindCacheManager(py::module_& m);
void BindEvents(py::module_& m);
void BindPlanner(py::module_& m);
void BindTrace(py::module_& m);
void BindSimulator(py::module_& m);
void BindPublisher(py::module_& m);
void BindTiers(py::module_& m);
void BindQuietCells(py::module_& m);
void BindVllmCalls(py::module_& m);
void BindVllmTracked(py::module_& m);
void BindVllmHit(py::module_& m);
void BindVllmManager(py::module_& m);

}  // namespace hkv::python

namespace pybind11::detail {

// Strong ids (enum class : unsigned) travel as Python ints.
template <typename Id>
struct StrongIdCaster {
  using Underlying = std::underlying_type_t<Id>;
  PYBIND11_TYPE_CASTER(Id, const_name("int"));
  bool load(handle source, bool convert) {
    make_caster<Underlying> inner;
    if (!inner.load(source, convert)) return false;
    value = Id{cast_op<Underlying>(inner)};
    return true;
  }
  static handle cast(Id id, return_value_policy /*policy*/, handle /*parent*/) {
    return PyLong_FromUnsignedLongLong(
        static_cast<unsigned long long>(static_cast<Underlying>(id)));
  }
};

template <>
struct type_caster<hkv::BlockId> : StrongIdCaster<hkv::BlockId> {};
template <>
struct type_caster<hkv::GroupId> : StrongIdCaster<hkv::GroupId> {};
template <>
struct type_caster<hkv::RequestId> : StrongIdCaster<hkv::RequestId> {};

// Block hashes travel as 32 bytes (XXH3-128 digests: 16, then zeros).
template <>
struct type_caster<hkv::BlockHash> {
  PYBIND11_TYPE_CASTER(hkv::BlockHash, const_name("bytes"));
  bool load(handle source, bool /*convert*/) {
    if (!PyBytes_Check(source.ptr())) return false;
    const std::string data = reinterpret_borrow<pybind11::bytes>(source);
    if (data.size() != value.bytes.size()) return false;
    std::copy(data.begin(), data.end(), value.bytes.begin());
    return true;
  }
  static handle cast(const hkv::BlockHash& hash, return_value_policy /*policy*/,
                     handle /*parent*/) {
    return PyBytes_FromStringAndSize(
        reinterpret_cast<const char*>(hash.bytes.data()),
        static_cast<Py_ssize_t>(hash.bytes.size()));
  }
};

}  // namespace pybind11::detail
