#pragma once

#include <string>
#include <utility>
#include <variant>

namespace tessera {

// What kind of failure an error is, for callers that must react differently (retry on a
// conflict, give up on invalid input); they branch on this, never on the message's text.
enum class ErrorCode {
  kInvalidInput,      // the input (an object, a field, a request) cannot be used as it is
  kNotFound,          // the object is not there
  kConflict,          // someone else changed it first (HTTP 409): read again and retry
  kUnavailable,       // the other side did not answer, or answered with a transient failure
  kInternal,          // a bug or a broken invariant
  kUnsupported,       // the other side (a driver, a GPU) does not implement what was asked
  kPermissionDenied,  // the other side refused for lack of rights
};

// An error is a human-readable message that already names the object and field it is about.
// An error from another system also keeps what it said, for callers that count or branch on it
// beyond the code: the NVML function and its return code, or the API server's HTTP status.
struct Error {
  std::string message;
  ErrorCode code = ErrorCode::kInvalidInput;
  std::string origin{};  // e.g. "nvmlDeviceCreateGpuInstanceWithPlacement"; "" when none
  int origin_code = 0;   // its return code: NVML's nvmlReturn_t, an HTTP status; 0 when none
};

// Result<T>: a value or an Error. std::expected is C++23; this is the small subset we need.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : data_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { return std::get<Error>(data_); }

 private:
  std::variant<T, Error> data_;
};

// Status: success or an Error, for operations without a value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error)  // NOLINT(google-explicit-constructor)
      : error_(std::move(error.message)), code_(error.code), ok_(false) {}
  static Status Ok() { return {}; }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const std::string& message() const { return error_; }
  // Meaningful only when !ok().
  ErrorCode code() const { return code_; }

 private:
  std::string error_;
  ErrorCode code_ = ErrorCode::kInvalidInput;
  bool ok_ = true;
};

}  // namespace tessera
