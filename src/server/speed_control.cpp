#include "server/speed_control.h"

#include <algorithm>
#include <cmath>

namespace veil {

Status Validate(const SpeedControlConfig& c) {
  if (!(c.window_ms >= 100 && c.window_ms <= 60000)) return Status::Error("speed control window_ms must be in [100, 60000]");
  if (!(c.low > 0 && c.low < c.high && c.high <= 5)) return Status::Error("speed control needs 0 < low < high <= 5");
  if (!(c.low_with_room > 0 && c.low_with_room <= 5)) return Status::Error("speed control needs 0 < low_with_room <= 5");
  if (!(c.stale_share >= 0 && c.stale_share < 1)) return Status::Error("speed control stale_share must be in [0, 1)");
  if (!(c.warmup_ms >= 0 && c.warmup_ms <= 600000)) return Status::Error("speed control warmup_ms must be in [0, 600000]");
  if (!(c.min_early_ms >= 0 && c.min_early_ms <= c.window_ms))
    return Status::Error("speed control min_early_ms must be in [0, window_ms]");
  if (!(c.calm_ms >= c.window_ms && c.calm_ms <= c.calm_max_ms && c.calm_max_ms <= 3600000))
    return Status::Error("speed control needs window_ms <= calm_ms <= calm_max_ms <= 3600000");
  return Status::Ok();
}

SpeedControl::SpeedControl(const SpeedControlConfig& c, double budget_ms, int max_level)
    : cfg_(c), budget_ms_(budget_ms), max_level_(std::max(0, max_level)), calm_need_ms_(c.calm_ms) {}

void SpeedControl::set_max_level(int m) {
  max_level_ = std::max(0, m);
  level_ = std::min(level_, max_level_);
  if (!judged_) level_ = std::max(level_, std::min(start_, max_level_));  // the encoder opened: its start
}

bool SpeedControl::StartAt(int level) {
  if (judged_ || !cfg_.enabled) return false;
  start_ = std::max(start_, level);
  level_ = std::max(level_, std::min(start_, max_level_));
  return true;
}

void SpeedControl::OnFrame(double now_ms, double latency_ms) {
  if (first_ms_ < 0) first_ms_ = now_ms;
  if (window_start_ < 0) window_start_ = now_ms;
  lat_.push_back(latency_ms);
  if (latency_ms > budget_ms_) ++late_;
}

void SpeedControl::OnStale(double now_ms) {
  if (first_ms_ < 0) first_ms_ = now_ms;
  if (window_start_ < 0) window_start_ = now_ms;
  ++stale_;
}

int SpeedControl::Level(double now_ms) {
  if (cfg_.enabled && window_start_ >= 0) {
    if (now_ms - window_start_ >= cfg_.window_ms) {
      last_full_ = lat_.size() + size_t(stale_);
      Judge(now_ms);
    } else if (DecidedEarly(now_ms)) {
      ++early_;
      Judge(now_ms);
    }
  }
  return cfg_.enabled ? level_ : 0;
}

bool SpeedControl::DecidedEarly(double now_ms) const {
  if (!cfg_.judge_early || last_full_ == 0 || now_ms - window_start_ < cfg_.min_early_ms) return false;
  if (now_ms - first_ms_ < cfg_.warmup_ms || level_ >= max_level_) return false;
  // Judge's p90 of n frames is past the budget (so over high x budget) when more
  // than n - ceil(0.9 n) of them left later than the budget; that count only grows with n, so a
  // count that decides a window of the expected length (or of what it holds already, if more)
  // decides the whole window and the part so far.
  const size_t n = std::max(lat_.size(), last_full_);
  const size_t may_be_late = n - size_t(std::ceil(0.9 * double(n)));
  if (size_t(late_) > may_be_late) return true;
  const double total = std::max(double(lat_.size()) + stale_, double(last_full_));
  return stale_ > cfg_.stale_share * total;
}

void SpeedControl::Judge(double now_ms) {
  if (now_ms - first_ms_ < cfg_.warmup_ms) {  // the session's start: neither over nor calm
    ++warmup_windows_;
    lat_.clear();
    stale_ = 0;
    late_ = 0;
    window_start_ = now_ms;
    return;
  }
  judged_ = true;
  const size_t n = lat_.size();
  const double total = double(n) + stale_;
  double p90 = 0;
  if (n > 0) {
    const size_t k = std::min(n - 1, size_t(std::ceil(0.9 * double(n))) - 1);
    std::nth_element(lat_.begin(), lat_.begin() + std::ptrdiff_t(k), lat_.end());
    p90 = lat_[k];
  }
  const bool over = total > 0 && (p90 > cfg_.high * budget_ms_ || stale_ > cfg_.stale_share * total);
  const bool calm = total > 0 && stale_ == 0 && p90 < (room_ ? std::clamp(cfg_.low_with_room, cfg_.low, cfg_.high) : cfg_.low) * budget_ms_;
  overloaded_ = over && level_ >= max_level_;
  behind_ = overloaded_ && (stale_ > cfg_.stale_share * total || p90 > budget_ms_);
  if (over) {
    calm_since_ = -1;
    if (level_ < max_level_) {
      ++level_;
      ++ups_;
      // Taking a level back did not hold: wait longer before the next try.
      if (now_ms - last_down_ms_ < cfg_.calm_max_ms) calm_need_ms_ = std::min(cfg_.calm_max_ms, calm_need_ms_ * 2);
    }
  } else if (calm) {
    if (calm_since_ < 0) calm_since_ = window_start_;
    if (level_ > 0 && now_ms - calm_since_ >= calm_need_ms_) {
      if (permit_ && !permit_(now_ms)) {
        ++held_;  // no room on the node for it: the stretch stays calm, the next window asks again
      } else {
        --level_;
        ++downs_;
        last_down_ms_ = now_ms;
        calm_since_ = now_ms;  // the next level back needs its own calm stretch
      }
    }
  } else {
    calm_since_ = -1;
  }
  // A long stretch without overuse: back to the quick pace.
  if (now_ms - last_down_ms_ > cfg_.calm_max_ms && !over) calm_need_ms_ = cfg_.calm_ms;
  lat_.clear();
  stale_ = 0;
  late_ = 0;
  window_start_ = now_ms;
}

void TakeBackBudget::Update(double since_ms, double cpu_ms_per_s, double budget_ms_per_s) {
  MutexLock lk(mu_);
  cpu_ = cpu_ms_per_s;
  budget_ = budget_ms_per_s;
  while (!grants_.empty() && grants_.front().first <= since_ms) grants_.pop_front();
}

bool TakeBackBudget::TryTake(double now_ms, double cost_ms_per_s) {
  MutexLock lk(mu_);
  if (cpu_ >= 0) {
    double pending = 0;
    for (const auto& g : grants_) pending += g.second;
    if (cpu_ + pending + cost_ms_per_s > budget_) {
      ++held_;
      return false;
    }
  }
  grants_.push_back({now_ms, cost_ms_per_s});
  ++granted_;
  return true;
}

uint64_t TakeBackBudget::granted() const {
  MutexLock lk(mu_);
  return granted_;
}

uint64_t TakeBackBudget::held() const {
  MutexLock lk(mu_);
  return held_;
}

}  // namespace veil
