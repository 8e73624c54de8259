#include "server/event_log.h"

#include <spdlog/spdlog.h>

#include "core/clock.h"

namespace veil {

uint64_t EventLog::Add(const std::string& type, const std::string& session, const std::string& detail) {
  Event e{UtcNowIso(), type, session, detail, 0};
  {
    MutexLock lk(mu_);
    e.seq = ++seq_;
    events_.push_back(e);
    while (events_.size() > capacity_) events_.pop_front();
  }
  if (type == "session_error") spdlog::error("event {} session={} {}", type, session, detail);
  else spdlog::info("event {} session={} {}", type, session, detail);
  return e.seq;
}

std::vector<Event> EventLog::After(uint64_t after_seq) const {
  MutexLock lk(mu_);
  std::vector<Event> out;
  for (const Event& e : events_)
    if (e.seq > after_seq) out.push_back(e);
  return out;
}

}  // namespace veil
