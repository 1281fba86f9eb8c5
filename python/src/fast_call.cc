#include "fast_call.h"

namespace hkv::python {

PyObject* RaiseInPython() {
  // The order of pybind11's dispatcher (pybind11.h, cpp_function): the
  // module-local translators, then the global ones (hkv's among them).
  if (py::detail::apply_exception_translators(
          py::detail::get_local_internals().registered_exception_translators) ||
      py::detail::apply_exception_translators(
          py::detail::get_internals().registered_exception_translators)) {
    return nullptr;
  }
  PyErr_SetString(PyExc_SystemError,
                  "an exception escaped every exception translator");
  return nullptr;
}

void AddFastCall(py::module_& m, PyMethodDef& def) {
  py::object function =
      py::reinterpret_steal<py::object>(PyCFunction_New(&def, nullptr));
  if (!function) throw py::error_already_set();
  m.attr(def.ml_name) = function;
}

PyTypeObject* AddType(py::module_& m, PyType_Spec& spec, const char* name) {
  py::object type = py::reinterpret_steal<py::object>(PyType_FromSpec(&spec));
  if (!type) throw py::error_already_set();
  m.attr(name) = type;
  return reinterpret_cast<PyTypeObject*>(type.release().ptr());
}

}  // namespace hkv::python
