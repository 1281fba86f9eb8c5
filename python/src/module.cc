// The hkv Python module's entry point and its exceptions: hkv.UsageError
// for caller bugs (hkv::UsageError, a std::logic_error) and hkv.Error for
// Result errors (bad input, an infeasible plan); both are ValueErrors, so a
// misuse never aborts the interpreter. The documented input limits
// (hkv/limits.h) are module constants.
#include "bindings.h"
#include "hkv/limits.h"

namespace hkv::python {

namespace {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kInfeasible:
      return "infeasible";
    case ErrorCode::kIoError:
      return "io_error";
    case ErrorCode::kCorruption:
      return "corruption";
  }
  return "unknown";
}

}  // namespace

void BindErrors(py::module_& m) {
  static py::exception<UsageError> usage_error(m, "UsageError",
                                               PyExc_ValueError);
  static py::exception<ResultError> result_error(m, "Error", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const UsageError& e) {
      usage_error(e.what());
    } catch (const ResultError& e) {
      // The code goes first, so callers can tell "infeasible" apart.
      const std::string text =
          std::string(ErrorCodeName(e.code())) + ": " + e.what();
      result_error(text.c_str());
    }
  });
}

void BindLimits(py::module_& m) {
  m.attr("MAX_TOKENS_PER_REQUEST") = kMaxTokensPerRequest;
  m.attr("MAX_POOL_BLOCKS") = kMaxPoolBlocks;
  m.attr("MAX_REQUESTS_PER_WORKLOAD") = kMaxRequestsPerWorkload;
  m.attr("MAX_TRACE_LINE_BYTES") = kMaxTraceLineBytes;
  m.attr("MAX_CONFIG_FILE_BYTES") = kMaxConfigFileBytes;
  m.attr("MAX_INPUT_SECONDS") = kMaxInputSeconds;
}

}  // namespace hkv::python

PYBIND11_MODULE(_hkv, m) {
  m.doc() = "hkv's C++ API, bound 1:1; use the hkv package on top of it.";
  hkv::python::BindErrors(m);
  hkv::python::BindLimits(m);
  hkv::python::BindRequest(m);
  hkv::python::BindCacheManager(m);
  hkv::python::BindEvents(m);
  hkv::python::BindPlanner(m);
  hkv::python::BindTrace(m);
  hkv::python::BindSimulator(m);
  hkv::python::BindPublisher(m);
  hkv::python::BindTiers(m);
  hkv::python::BindQuietCells(m);
  hkv::python::BindVllmCalls(m);
  hkv::python::BindVllmTracked(m);
  hkv::python::BindVllmHit(m);
  hkv::python::BindVllmManager(m);
}
