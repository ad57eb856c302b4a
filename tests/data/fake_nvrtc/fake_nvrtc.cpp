// A libnvrtc.so.<major> of the tests' own: every entry point kjit resolves, a version of its own
// (FAKE_NVRTC_MAJOR.FAKE_NVRTC_MINOR) and sm_90 as its one arch; it compiles nothing (every compile
// fails with a log saying so). tests/unit/test_base_nvrtc_library.cpp puts it where a toolkit's
// NVRTC was, to show that kjit asks a changed library again instead of taking the answer it kept.
#include <nvrtc.h>

#include <cstring>

namespace {
constexpr const char k_log[] = "fake NVRTC: compiles nothing";
}

extern "C" {
const char* nvrtcGetErrorString(nvrtcResult) { return "fake NVRTC error"; }
nvrtcResult nvrtcVersion(int* major, int* minor) {
  *major = FAKE_NVRTC_MAJOR;
  *minor = FAKE_NVRTC_MINOR;
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcGetNumSupportedArchs(int* count) {
  *count = 1;
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcGetSupportedArchs(int* archs) {
  archs[0] = 90;
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcCreateProgram(nvrtcProgram* prog, const char*, const char*, int, const char* const*, const char* const*) {
  *prog = reinterpret_cast<nvrtcProgram>(new char[1]);
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog) {
  delete[] reinterpret_cast<char*>(*prog);
  *prog = nullptr;
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcCompileProgram(nvrtcProgram, int, const char* const*) { return NVRTC_ERROR_COMPILATION; }
nvrtcResult nvrtcGetPTXSize(nvrtcProgram, size_t*) { return NVRTC_ERROR_INVALID_PROGRAM; }
nvrtcResult nvrtcGetPTX(nvrtcProgram, char*) { return NVRTC_ERROR_INVALID_PROGRAM; }
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram, size_t*) { return NVRTC_ERROR_INVALID_PROGRAM; }
nvrtcResult nvrtcGetCUBIN(nvrtcProgram, char*) { return NVRTC_ERROR_INVALID_PROGRAM; }
nvrtcResult nvrtcGetLTOIRSize(nvrtcProgram, size_t*) { return NVRTC_ERROR_INVALID_PROGRAM; }
nvrtcResult nvrtcGetLTOIR(nvrtcProgram, char*) { return NVRTC_ERROR_INVALID_PROGRAM; }
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram, size_t* size) {
  *size = sizeof k_log;
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcGetProgramLog(nvrtcProgram, char* log) {
  std::memcpy(log, k_log, sizeof k_log);
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcAddNameExpression(nvrtcProgram, const char* const) { return NVRTC_SUCCESS; }
nvrtcResult nvrtcGetLoweredName(nvrtcProgram, const char* const, const char**) { return NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION; }
nvrtcResult nvrtcGetPCHHeapSize(size_t* size) {
  *size = 0;
  return NVRTC_SUCCESS;
}
nvrtcResult nvrtcSetPCHHeapSize(size_t) { return NVRTC_SUCCESS; }
nvrtcResult nvrtcGetPCHCreateStatus(nvrtcProgram) { return NVRTC_SUCCESS; }
nvrtcResult nvrtcGetPCHHeapSizeRequired(nvrtcProgram, size_t* size) {
  *size = 0;
  return NVRTC_SUCCESS;
}
}
