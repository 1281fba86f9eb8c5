// Module functions called as CPython vectorcalls (METH_FASTCALL), for the
// calls hkv.vllm makes on every scheduler step: pybind11's dispatcher costs
// about 40 ns an argument (0.8 µs for allocate_slots' 17 arguments, a fifth
// of a decode allocation that crosses a block), converting them one by one
// as Convert does about 0.1 µs in all.
//
// A body takes the arguments as a FastArgs and returns a py::object; what it
// throws is raised in Python as a pybind11 binding's would be (hkv.UsageError,
// hkv.Error, pybind11's built-in translations).
#pragma once

#include <cxxabi.h>

#include <string>
#include <type_traits>
#include <utility>

#include "bindings.h"

namespace hkv::python {

// The positional arguments of a fast call. UsageError for a count other
// than expected.
class FastArgs {
 public:
  FastArgs(const char* function, PyObject* const* args, Py_ssize_t count,
           Py_ssize_t expected)
      : function_(function), args_(args) {
    if (count != expected) {
      throw UsageError(std::string(function) + "() takes " +
                       std::to_string(expected) + " arguments, got " +
                       std::to_string(count));
    }
  }

  py::handle operator[](Py_ssize_t i) const { return args_[i]; }
  // Argument `i` converted to T, as Convert does (UsageError naming the
  // function and `name`, what T accepts and what was passed); the name is
  // put together only for the error.
  // Python types (py::tuple, py::list) are taken as they are, never
  // converted: a list must not become a tuple, nor a tuple a list copy.
  template <typename T>
  T Get(Py_ssize_t i, const char* name) const {
    const py::handle value(args_[i]);
    try {
      if constexpr (std::is_base_of_v<py::object, T>) {
        if (py::isinstance<T>(value)) return py::reinterpret_borrow<T>(value);
      } else {
        return value.cast<T>();
      }
    } catch (const py::cast_error&) {
    }
    RejectConversion<T>(value, std::string(function_) + "(): " + name);
  }

 private:
  const char* function_;
  PyObject* const* args_;
};

// Raises the exception being handled in Python as pybind11's dispatcher
// does: the module's translators, then pybind11's own. Returns nullptr (the
// error return of a CPython function). Call only from a catch block.
PyObject* RaiseInPython();

// What `body` (a callable returning py::object) returns, as a new reference
// for a CPython function to return; what it throws is raised in Python
// (RaiseInPython) and nullptr returned. A body that returns a null object
// gets nullptr with no exception set.
template <typename Body>
PyObject* Guarded(Body&& body) {
  try {
    return std::forward<Body>(body)().release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  } catch (abi::__forced_unwind&) {  // a thread's cancellation goes on
    throw;
  } catch (...) {
    return RaiseInPython();
  }
}

// A METH_FASTCALL function running Body (a function of (const FastArgs&)
// returning py::object, named Name, taking Count arguments).
template <const char* Name, Py_ssize_t Count,
          py::object (*Body)(const FastArgs&)>
PyObject* FastCall(PyObject* /*module*/, PyObject* const* args,
                   Py_ssize_t count) {
  return Guarded([&] { return Body(FastArgs(Name, args, count, Count)); });
}

// The method entry of FastCall<Name, Count, Body>, with `doc`.
template <const char* Name, Py_ssize_t Count,
          py::object (*Body)(const FastArgs&)>
PyMethodDef FastMethod(const char* doc) {
  // A METH_FASTCALL function is stored as a PyCFunction; the cast goes
  // through a plain function pointer type, as CPython's own modules do.
  return {Name,
          reinterpret_cast<PyCFunction>(
              reinterpret_cast<void (*)()>(&FastCall<Name, Count, Body>)),
          METH_FASTCALL, doc};
}

// Adds `def` (static: CPython keeps the pointer) to module `m`.
void AddFastCall(py::module_& m, PyMethodDef& def);

// Makes the type `spec` describes (static: CPython keeps the pointer) and
// adds it to module `m` as `name`; the type lives as long as the process.
PyTypeObject* AddType(py::module_& m, PyType_Spec& spec, const char* name);

}  // namespace hkv::python
