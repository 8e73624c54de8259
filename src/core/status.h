// Result type for per-frame and per-packet paths: no exceptions there.
#pragma once
#include <string>
#include <utility>
#include <variant>

namespace veil {

// An error with a human-readable message. Empty message == OK.
class Status {
 public:
  Status() = default;
  static Status Ok() { return {}; }
  static Status Error(std::string msg) { return Status(std::move(msg)); }
  bool ok() const { return msg_.empty(); }
  explicit operator bool() const { return ok(); }
  const std::string& message() const { return msg_; }

 private:
  explicit Status(std::string m) : msg_(m.empty() ? std::string("unknown error") : std::move(m)) {}
  std::string msg_;
};

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
