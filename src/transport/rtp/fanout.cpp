#include "transport/rtp/fanout.h"

#include "core/clock.h"
#include "core/thread_cpu.h"

namespace veil {

Fanout::Fanout(size_t queue_frames, OnSent on_sent, OnDrop on_drop)
    : cap_(std::max<size_t>(1, queue_frames)), on_sent_(std::move(on_sent)), on_drop_(std::move(on_drop)) {}

Fanout::~Fanout() {
  std::map<std::string, std::shared_ptr<Viewer>> all;
  {
    std::lock_guard lk(mu_);
    all.swap(viewers_);
  }
  for (auto& [k, v] : all) Stop(*v);
}

void Fanout::Stop(Viewer& v) {
  {
    std::lock_guard sl(v.send_mu);
    std::lock_guard lk(v.mu);
    v.stop = true;
  }
  v.cv.notify_all();
  if (v.thread.joinable()) v.thread.join();
}

Status Fanout::Add(const std::string& key, Sink sink, bool inline_send) {
  if (!sink) return Status::Error("viewer without a sink");
  std::lock_guard lk(mu_);
  if (viewers_.count(key)) return Status::Error("viewer " + key + " already exists");
  auto v = std::make_shared<Viewer>();
  v->sink = std::move(sink);
  v->inline_send = inline_send;
  Viewer* p = v.get();
  if (!inline_send) v->thread = std::thread([this, p] {
    NameThisThread("fanout");
    Run(p);
  });
  viewers_.emplace(key, std::move(v));
  return Status::Ok();
}

bool Fanout::Remove(const std::string& key) {
  std::shared_ptr<Viewer> v;
  {
    std::lock_guard lk(mu_);
    auto it = viewers_.find(key);
    if (it == viewers_.end()) return false;
    v = std::move(it->second);
    viewers_.erase(it);
  }
  Stop(*v);
  return true;
}

void Fanout::Publish(const RtpFramePtr& f) {
  bool dropped_now = false;
  std::vector<std::shared_ptr<Viewer>> now;  // inline viewers that take this frame
  {
    std::lock_guard lk(mu_);
    for (auto& [k, v] : viewers_) {
      std::lock_guard vl(v->mu);
      if (v->queue.size() >= cap_) {  // never for an inline viewer: it has no queue
        // The viewer is behind: everything queued depends on frames it will
        // now never get, so it all goes, and the viewer restarts at a keyframe.
        v->stats.frames_dropped += v->queue.size();
        dropped_total_ += v->queue.size();
        v->queue.clear();
        v->need_key = true;
        dropped_now = true;
      }
      if (v->need_key && !f->keyframe) {
        ++v->stats.frames_dropped;
        ++dropped_total_;
        continue;
      }
      v->need_key = false;
      if (v->inline_send) {
        now.push_back(v);
        continue;
      }
      v->queue.push_back(f);
      v->cv.notify_one();
    }
  }
  for (const auto& v : now) Deliver(*v, *f);
  if (dropped_now && on_drop_) on_drop_();
}

void Fanout::Deliver(Viewer& v, const RtpFrame& f) {
  std::unique_lock sl(v.send_mu);
  {
    std::lock_guard lk(v.mu);
    if (v.stop) return;  // removed since Publish chose it
  }
  const bool ok = v.sink(f);
  sl.unlock();
  const double t = NowMs();
  {
    std::lock_guard lk(v.mu);
    if (ok) {
      ++v.stats.frames_sent;
      v.stats.packets_sent += f.packets.size();
    } else {
      ++v.stats.send_errors;
    }
  }
  if (ok && on_sent_) on_sent_(f, t);
}

void Fanout::Run(Viewer* v) {
  for (;;) {
    RtpFramePtr f;
    {
      std::unique_lock lk(v->mu);
      v->cv.wait(lk, [&] { return v->stop || !v->queue.empty(); });
      if (v->stop) return;
      f = std::move(v->queue.front());
      v->queue.pop_front();
    }
    Deliver(*v, *f);
  }
}

size_t Fanout::size() const {
  std::lock_guard lk(mu_);
  return viewers_.size();
}

std::map<std::string, ViewerStats> Fanout::Stats() const {
  std::map<std::string, ViewerStats> out;
  std::lock_guard lk(mu_);
  for (const auto& [k, v] : viewers_) {
    std::lock_guard vl(v->mu);
    ViewerStats s = v->stats;
    s.queued = v->queue.size();
    out[k] = s;
  }
  return out;
}

}  // namespace veil
