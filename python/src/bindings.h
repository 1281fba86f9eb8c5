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
#include <span>
#include <string>
#include <type_traits>
#include <utility>

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

void BindErrors(py::module_& m);
void BindRequest(py::module_& m);
void BindCacheManager(py::module_& m);
void BindEvents(py::module_& m);
void BindPlanner(py::module_& m);
void BindTrace(py::module_& m);
// Only when the CLI's simulator front end is built (HKV_PYTHON_SIMULATOR).
void BindSimulator(py::module_& m);

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
