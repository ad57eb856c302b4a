// The exceptions kjit's public API throws. Every message says what was attempted, on what, and
// why it failed. Messages are built only on failure.
//
//   kjit::Error                  base of all of them
//   ├── kjit::CudaError          a CUDA driver call failed (result code, call, what it was for)
//   ├── kjit::DriverNotFoundError  no usable libcuda.so.1 (compile-only features still work)
//   ├── kjit::NvrtcError         an NVRTC API call (not the compile itself) failed
//   ├── kjit::CompileError       NVRTC rejected the program: name, options, log, source excerpt
//   ├── kjit::LinkError          nvJitLink refused a link (its log, the inputs named), or is missing
//   ├── kjit::UsageError         bad input: unknown kernel, wrong argument list, bad option,
//   │   │                        launch configuration over the device limit, unsupported arch
//   │   └── kjit::ArgumentError  an argument that does not fit its kernel parameter (run-time
//   │                            typed launches: KernelSignature, the Python package)
//   ├── kjit::UnavailableError   a tool kjit needs is not installed here (nvdisasm, cuobjdump),
//   │                            or a cache folder it must use cannot be used
//   ├── kjit::CacheMissError     a hit was required (KJIT_REQUIRE_HIT) and every cache tier missed
//   └── kjit::IoError            reading a source or writing an output file failed
#pragma once

#include <kjit/export.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace kjit {

class KJIT_API Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class KJIT_API CudaError : public Error {
public:
  CudaError(int result, std::string result_name, std::string call, const std::string& message)
      : Error(message), m_result(result), m_result_name(std::move(result_name)), m_call(std::move(call)) {}
  int result() const noexcept { return m_result; }  // the CUresult
  const std::string& result_name() const noexcept { return m_result_name; }
  const std::string& call() const noexcept { return m_call; }

private:
  int m_result;
  std::string m_result_name;
  std::string m_call;
};

class KJIT_API DriverNotFoundError : public Error {
public:
  using Error::Error;
};

class KJIT_API NvrtcError : public Error {
public:
  NvrtcError(int result, const std::string& message) : Error(message), m_result(result) {}
  int result() const noexcept { return m_result; }  // the nvrtcResult

private:
  int m_result;
};

class KJIT_API CompileError : public Error {
public:
  CompileError(std::string program, std::vector<std::string> options, std::string log,
               std::string excerpt, const std::string& message)
      : Error(message), m_program(std::move(program)), m_options(std::move(options)),
        m_log(std::move(log)), m_excerpt(std::move(excerpt)) {}
  const std::string& program() const noexcept { return m_program; }
  const std::vector<std::string>& options() const noexcept { return m_options; }
  const std::string& log() const noexcept { return m_log; }
  // Numbered source lines around each line the log names ("  12 | x = y +;").
  const std::string& excerpt() const noexcept { return m_excerpt; }

private:
  std::string m_program;
  std::vector<std::string> m_options;
  std::string m_log;
  std::string m_excerpt;
};

// nvJitLink refused a link (an undefined or duplicate symbol, an arch mismatch, LTO-IR without
// lto()), or libnvJitLink could not be loaded. The message names the link and its inputs.
class KJIT_API LinkError : public Error {
public:
  LinkError(std::string link, std::vector<std::string> inputs, std::string log, const std::string& message)
      : Error(message), m_link(std::move(link)), m_inputs(std::move(inputs)), m_log(std::move(log)) {}
  const std::string& link() const noexcept { return m_link; }
  const std::vector<std::string>& inputs() const noexcept { return m_inputs; }  // "kind name", in link order
  const std::string& log() const noexcept { return m_log; }                    // nvJitLink's error log

private:
  std::string m_link;
  std::vector<std::string> m_inputs;
  std::string m_log;
};

class KJIT_API UsageError : public Error {
public:
  using Error::Error;
  UsageError(const std::string& message, std::string log) : Error(message), m_log(std::move(log)) {}
  // The log of the tool that refused the input, when there is one (NVRTC's for a rejected option).
  const std::string& log() const noexcept { return m_log; }

private:
  std::string m_log;
};

class KJIT_API ArgumentError : public UsageError {
public:
  using UsageError::UsageError;
};

class KJIT_API UnavailableError : public Error {
public:
  using Error::Error;
};

// A request missed every cache tier where a hit was required (RuntimeConfig::require_hit,
// KJIT_REQUIRE_HIT, `kjit --require-hit`): nothing was compiled. The message names the program,
// its cache key, and each tier asked with why it missed, as found then (disk: absent, damaged,
// unreadable, not in use; remote: absent, rejected (no or a bad signature, damaged, too large),
// its shard down, unreachable; or none configured).
class KJIT_API CacheMissError : public Error {
public:
  struct Tier {
    std::string name;  // "disk", "remote"
    std::string why;
  };
  CacheMissError(std::string program, std::string key, std::vector<Tier> tiers, const std::string& message)
      : Error(message), m_program(std::move(program)), m_key(std::move(key)), m_tiers(std::move(tiers)) {}
  const std::string& program() const noexcept { return m_program; }
  const std::string& key() const noexcept { return m_key; }  // 32 hex digits
  const std::vector<Tier>& tiers() const noexcept { return m_tiers; }

private:
  std::string m_program;
  std::string m_key;
  std::vector<Tier> m_tiers;
};

class KJIT_API IoError : public Error {
public:
  using Error::Error;
};

}  // namespace kjit
