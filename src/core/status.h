// Result type for per-frame and per-packet paths: no exceptions there.
#pragma once
#include <string>
#include <utility>
#include <variant>

namespace veil {

// What kind of failure a Status is, for callers that act on it: the HTTP layer maps it to a
// status code (server/http_util: the only place that knows HTTP's numbers), a client decides
// whether to retry. Most errors are kUnknown: only their message matters.
enum class StatusCode {
  kOk = 0,
  kUnknown,          // an error nobody needs to tell apart (HTTP 500)
  kInvalidArgument,  // malformed or out of range: the same request fails again (400)
  kForbidden,        // not allowed for this caller or address (403)
  kNotFound,         // no such session, viewer or resource (404)
  kConflict,         // the resource's state does not allow it: exists, taken, ended (409)
  kUnsupported,      // well formed, but nothing here can serve it, e.g. no usable codec (422)
  kUnavailable,      // not now: capacity, draining, a session still ending; retry later (503)
  kInternal,         // a fault of the server itself (500)
};

// "invalid_argument", "not_found", ...: for logs and JSON.
const char* StatusCodeName(StatusCode c);

// An error with a code and a human-readable message. kOk (and an empty message) == OK.
class Status {
 public:
  Status() = default;
  static Status Ok() { return {}; }
  static Status Error(std::string msg) { return Status(StatusCode::kUnknown, std::move(msg)); }
  static Status Error(StatusCode code, std::string msg) { return Status(code, std::move(msg)); }
  bool ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return msg_; }

 private:
  Status(StatusCode c, std::string m)
      : code_(c == StatusCode::kOk ? StatusCode::kUnknown : c),
        msg_(m.empty() ? std::string("unknown error") : std::move(m)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string msg_;
};

inline const char* StatusCodeName(StatusCode c) {
  switch (c) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kUnknown: return "unknown";
    case StatusCode::kInvalidArgument: return "invalid_argument";
    case StatusCode::kForbidden: return "forbidden";
    case StatusCode::kNotFound: return "not_found";
    case StatusCode::kConflict: return "conflict";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kInternal: return "internal";
  }
  return "unknown";
}

template <typename T>
class Result {
 public:
  Result(T v) : v_(std::move(v)) {}              // NOLINT: implicit by design
  Result(Status s) : v_(std::move(s)) {}         // NOLINT
  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }
  const std::string& error() const { return std::get<Status>(v_).message(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace veil
