// The node's event log: every change of state (a session started or ended, a viewer, a mode
// switch, shedding, fault injection), numbered, the newest `capacity` kept for GET /v1/events
// and each one logged.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/mutex.h"

namespace veil {

struct Event {
  std::string time, type, session, detail;  // time: UTC ISO 8601
  uint64_t seq = 0;                         // 1, 2, ...: never reused, also after the ring drops one
};

class EventLog {
 public:
  explicit EventLog(size_t capacity = 512) : capacity_(capacity) {}
  // Appends (and logs: session_error as an error, the rest as info); returns its seq.
  uint64_t Add(const std::string& type, const std::string& session, const std::string& detail);
  // The kept events with seq > after_seq, oldest first.
  std::vector<Event> After(uint64_t after_seq) const;

 private:
  const size_t capacity_;
  mutable Mutex mu_;
  std::deque<Event> events_ GUARDED_BY(mu_);
  uint64_t seq_ GUARDED_BY(mu_) = 0;
};

}  // namespace veil
