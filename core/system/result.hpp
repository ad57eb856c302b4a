// kjit::system::Result<T>: what a cache helper returns, either a T or a Failure whose message
// says what was attempted, on what, and why ("opening lock file /c/locks/ab.lock: Permission
// denied"); Result<void> is success or a Failure. Failure::reason tells a wait bound that
// passed (timed_out: a lock held by someone else) from anything else (error). The one way
// cache/ reports trouble in its helpers (std::expected is C++23). Like std::optional, it
// converts to bool and dereferences with * and ->; value(), * and -> on a Failure, and error()
// on a success, are the caller's bug and throw std::bad_variant_access (bad_optional_access
// for Result<void>). Nothing else here throws.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace kjit::system {

struct Failure {
  enum class Reason {
    error,      // the attempt failed (an errno, a missing folder, a short write...)
    timed_out,  // waited as long as allowed for a lock someone else holds (or, no wait: it is held)
    stalled,    // the lock's holder is alive but has shown no progress (system::LockWatch)
    too_large,  // a value longer than the caller takes, refused from its length before it was read
    refused,    // a server that answers refused the command (a Redis at maxmemory: OOM; a read-only replica)
  };
  std::string message;
  Reason reason = Reason::error;

  bool timed_out() const { return reason == Reason::timed_out; }
};

template <class T>
class Result {
public:
  Result(T value) : m_state(std::in_place_index<0>, std::move(value)) {}
  Result(Failure failure) : m_state(std::in_place_index<1>, std::move(failure)) {}

  bool has_value() const { return m_state.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<0>(m_state); }
  const T& value() const& { return std::get<0>(m_state); }
  T&& value() && { return std::get<0>(std::move(m_state)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Failure& error() const { return std::get<1>(m_state); }

private:
  std::variant<T, Failure> m_state;
};

template <>
class Result<void> {
public:
  Result() = default;  // success
  Result(Failure failure) : m_failure(std::move(failure)) {}

  bool has_value() const { return !m_failure.has_value(); }
  explicit operator bool() const { return has_value(); }

  const Failure& error() const { return m_failure.value(); }

private:
  std::optional<Failure> m_failure;
};

}  // namespace kjit::system
