// SessionManager: housekeeping, once a tick: publishers that went away, failed pipelines,
// resolution changes, viewers that died, the capacity model's learning, node-level shedding.
#include <malloc.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/clock.h"
#include "server/session_manager.h"

namespace veil {
namespace {
constexpr double kTickMs = 250;
}  // namespace

std::string SessionManager::OverloadReason() const {
  if (overloaded_since_ms_ < 0 || !deps_.server.shed) return "";
  // Not overloaded once every session that made it so has ended (deleted, or shed), though the
  // housekeeping's next tick (up to 250 ms away) has yet to say so: a load that ended its late
  // sessions and started others at once was refused in that gap. A session created since under
  // the same id is another session.
  bool still_here = false;
  for (const auto& [id, created_ms] : overloaded_ids_) {
    auto it = sessions_.find(id);
    still_here = still_here || (it != sessions_.end() && it->second.created_ms == created_ms);
  }
  if (!still_here) return "";
  return "node overloaded: " + overloaded_why_ + "; new viewers and sessions are refused until it recovers (server.shed)";
}

void SessionManager::ShedNode(double now, const std::vector<std::string>& overloaded,
                              const std::vector<std::string>& behind,
                              std::vector<std::pair<std::string, std::pair<std::string, std::string>>>& ending) {
  m_overloaded_->Set(overloaded.empty() ? 0 : 1);
  overloaded_ids_.clear();
  for (const std::string& id : overloaded)
    if (auto it = sessions_.find(id); it != sessions_.end()) overloaded_ids_.push_back({id, it->second.created_ms});
  if (overloaded.empty()) {
    if (overloaded_since_ms_ >= 0)
      AddEvent("node_recovered", "", fmt::format("no session is late at its last shed level after {:.1f} s",
                                                 (now - overloaded_since_ms_) / 1000));
    overloaded_since_ms_ = -1;
    behind_since_ms_ = -1;  // falling behind is a kind of overloaded: its stretch ends with it
    return;
  }
  overloaded_why_ = fmt::format("{} of {} session(s) at their last shed level and still late", overloaded.size(),
                                sessions_.size());
  if (overloaded_since_ms_ < 0) {
    overloaded_since_ms_ = now;
    AddEvent("node_overloaded", "", overloaded_why_ + " (" + fmt::format("{}", fmt::join(overloaded, ", ")) + ")");
  }
  // Last: the newest session ends, so the others keep their frame rate. Never the only one, and
  // only while frames fall behind (stale, or later than the frame interval) for the whole
  // stretch: a node whose sessions' frames arrive at the same instants runs late at every level
  // with every frame delivered in time, and ending a session would buy nothing the viewers see
  // (docs/capacity.md, frame phases).
  if (behind.empty()) {
    behind_since_ms_ = -1;
    return;
  }
  if (behind_since_ms_ < 0) behind_since_ms_ = now;
  if (!deps_.server.shed || now - behind_since_ms_ < ShedEndAfterMs() || sessions_.size() < 2) return;
  const std::string* newest = nullptr;
  double newest_ms = -1;
  for (const auto& [id, e] : sessions_)
    if (e.session && e.created_ms > newest_ms) {
      newest_ms = e.created_ms;
      newest = &id;
    }
  if (!newest) return;
  ending.push_back({*newest, {"shed", fmt::format("node overloaded for {:.0f} s with every shed level taken ({}; "
                                                  "{} falling behind: frames stale or later than the frame interval); "
                                                  "the newest session ends so the others keep their frame rate",
                                                  (now - behind_since_ms_) / 1000, overloaded_why_, behind.size())}});
  m_shed_ended_->Inc();
  behind_since_ms_ = now;  // the others get their time to recover before the next
}

void SessionManager::Housekeeping() {
  double last_cpu = ProcessCpuMs(), last_wall = NowMs();
  thread_cpu_counted_ = thread_cpu_.Sample();  // the kinds count from here on, as the process's CPU does
  for (;;) {
    {
      MutexLock lk(hk_mu_);
      lk.WaitFor(hk_cv_, std::chrono::milliseconds(int(kTickMs)), [&]() REQUIRES(hk_mu_) { return hk_stop_; });
      if (hk_stop_) return;
    }
    const double now = NowMs();
    if (now - last_wall >= 1000) {
      const double cpu = ProcessCpuMs();
      m_cpu_pct_->Set(100.0 * (cpu - last_cpu) / (now - last_wall));
      m_cpu_s_->Inc((cpu - last_cpu) / 1000.0);
      for (const auto& [kind, seconds] : thread_cpu_.Sample()) {
        double& counted = thread_cpu_counted_[kind];
        if (seconds > counted)
          metrics_
              ->GetCounter("veil_thread_cpu_seconds_total",
                           "Process CPU time by kind of thread (veil-frame: the frame executor; veil-session: a session's own "
                           "worker; veil-infer: detections; veil-http; unnamed: threads veil did not start, GStreamer's "
                           "streaming threads foremost), s",
                           {{"threads", kind}})
              .Inc(seconds - counted);
        counted = std::max(counted, seconds);
      }
      {
        MutexLock lk(mu_);
        if (LearnCosts(cpu - last_cpu, now - last_wall) > 0) memory_unsaved_ = true;
        // Room: what the process took in this second leaves one more default session's planned
        // cost (what admission would take) inside the node's budget, so a session's shed level
        // may come back at a higher p90 (server.shed_low_with_room): every session taking a
        // level back in the same seconds (about 1 ms a frame each) still fits. A node near its
        // budget keeps shed_low alone (4 anonymized VP8 sessions at 140-146% of 2 cores took
        // 6% more CPU with their levels back, one compare on a slow hour).
        SessionLoad one;
        one.mode = deps_.privacy.mode;
        const double cpu_ms_per_s = (cpu - last_cpu) * 1000 / (now - last_wall), budget = capacity_->BudgetMsPerS();
        node_room_ = cpu_ms_per_s + capacity_->CostMsPerS(one) <= budget;
        take_back_->Update(last_wall, cpu_ms_per_s, budget);  // server.shed_take_back_in_budget
      }
      if (const uint64_t held = take_back_->held(); held > take_backs_held_seen_) {
        m_take_backs_held_->Inc(double(held - take_backs_held_seen_));
        take_backs_held_seen_ = held;
      }
      if (memory_unsaved_ && !deps_.server.capacity_state.empty() && now - memory_saved_ms_ >= kMemorySaveMs) SaveMemory();
      RetimeWhenIdle(now);
      const CapacityState c = Capacity();
      m_capacity_->Set(c.capacity_sessions);
      m_headroom_->Set(c.headroom);
      m_limit_->Set(c.limit_sessions);
      last_cpu = cpu;  // a re-timing's CPU falls in the next interval: idle, or one a session began in
      last_wall = now;
    }
    // Decide under the lock, end sessions (and drop dead WebRTC viewers) outside it.
    std::vector<std::pair<std::string, std::pair<std::string, std::string>>> ending;
    std::vector<std::pair<std::shared_ptr<LiveSession>, std::map<std::string, std::string>>> dead_viewers;
    std::vector<std::string> overloaded;  // sessions that shed every level and are still late
    std::vector<std::string> behind;      // of those, the ones whose frames fall behind
    {
      MutexLock lk(mu_);
      for (auto& [id, e] : sessions_) {
        if (!e.session) continue;
        e.session->SetNodeRoom(node_room_);
        const LiveSessionStats st = e.session->Tick();
        if (st.shed_level != e.shed_level) {
          AddEvent("shed_level", id,
                   fmt::format("level {} -> {} of {}: encoder {}, detection every {} frames{}", e.shed_level, st.shed_level,
                               st.max_shed_level, st.encoder_speed, st.detect_every,
                               st.detect_trimmed ? ", trimmed window" : ""));
          e.shed_level = st.shed_level;
        }
        e.recent_p99_ms = st.recent_p99_ms;
        if (st.overloaded) overloaded.push_back(id);
        if (st.falling_behind) behind.push_back(id);
        if (st.resolution_changes > e.resolution_changes) {
          e.resolution_changes = st.resolution_changes;
          AddEvent("resolution_changed", id, std::to_string(st.width) + "x" + std::to_string(st.height) +
                                                 " (the encoder re-opened at a keyframe)");
        }
        if (!st.web_viewers.empty()) {
          auto dead = e.session->DeadWebViewers(deps_.server.webrtc.connect_timeout_ms);
          if (!dead.empty()) {
            auto& vs = e.info.viewers;
            for (const auto& [key, why] : dead) {
              const std::string& gone = key;  // (clang 14 cannot capture a structured binding)
              vs.erase(std::remove_if(vs.begin(), vs.end(), [&](const ViewerInfo& v) { return v.id == gone; }), vs.end());
              AddEvent("viewer_removed", id, key + " (" + why + ")");
            }
            dead_viewers.push_back({e.session, std::move(dead)});
          }
        }
        if (std::string err = e.session->error(); !err.empty()) {
          ending.push_back({id, {"error", err}});
          continue;
        }
        if (st.last_packet_age_ms >= 0 && st.last_packet_age_ms > deps_.server.publisher_timeout_ms)
          ending.push_back({id, {"publisher_timeout", "no packet for " + std::to_string(int(st.last_packet_age_ms)) + " ms"}});
        else if (st.last_packet_age_ms < 0 && st.age_ms > deps_.server.start_timeout_ms)
          ending.push_back({id, {"start_timeout", "no packet in " + std::to_string(int(st.age_ms)) + " ms"}});
      }
      ShedNode(now, overloaded, behind, ending);
    }
    for (auto& [session, dead] : dead_viewers)
      for (const auto& [key, why] : dead) session->RemoveWebViewer(key);
    dead_viewers.clear();
    for (const auto& [id, why] : ending) Take(id, why.first, why.second).reset();
  }
}

}  // namespace veil
