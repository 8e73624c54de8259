// A live session's ingest side (server/live_session.h): each frame from the receiving thread
// (RTP or WHIP) is handed over with its arrival time and decoded, on the frame executor
// (HandOver, then the executor's turns: NextDue, RunOne) or on the receiving thread
// (DecodeAndQueue), and the decoded pictures are queued for the privacy stage (ProcessOne).
#include <algorithm>
#include <exception>

#include "core/clock.h"
#include "server/live_session.h"

namespace veil {

void LiveSession::OnEncoded(EncodedFrame&& f, uint32_t rtp_ts) {
  // Called on a GStreamer streaming thread (RTP or WHIP ingest): an exception must not cross
  // into C code (std::terminate, the whole server). It ends this session, as a pipeline error does.
  try {
    if (decode_on_executor_) HandOver(std::move(f), rtp_ts);
    else DecodeAndQueue(std::move(f), rtp_ts);
  } catch (const std::exception& e) {
    Fail(std::string("ingest failed: ") + e.what());
  } catch (...) {
    Fail("ingest failed: unknown exception");
  }
}

void LiveSession::HandOver(EncodedFrame&& f, uint32_t rtp_ts) {
  const double now = NowMs();
  last_packet_ms_.store(now);
  const uint64_t seq = ++ingest_seq_;
  // Forwarding: sent now, if nothing handed over before it is still to be sent or queued (the
  // receiving thread is the only one that hands over, so no frame can come between the check
  // and the send).
  bool none_undecided = false;
  if (forwarding_now_.load()) {  // else nothing to check: the frame is not forwarded on arrival
    MutexLock lk(pending_mu_);
    none_undecided = undecided_ == 0;
  }
  uint64_t out_seq = 0;
  if (none_undecided) {
    const double cpu0 = ThreadCpuMs();
    out_seq = ForwardOnArrival(f, rtp_ts, seq, f.arrival_ms > 0 ? f.arrival_ms : now);
    if (out_seq > 0) cpu_ms_.fetch_add(ThreadCpuMs() - cpu0);
  }
  uint64_t dropped = 0, given_up = 0;
  bool ask_key = false;
  {
    MutexLock lk(pending_mu_);
    if (pending_.size() >= kMaxPending) {
      // The executor is seconds behind: decoding what waits would only make stale pictures.
      for (const Pending& p : pending_) {
        if (p.out_seq > 0) {
          ++given_up;  // already sent: only its decode is given up
        } else {
          ++dropped;
          --undecided_;
        }
      }
      pending_.clear();
      pending_to_key_ = true;
    }
    if (pending_to_key_ && !f.keyframe) {
      ++(out_seq == 0 ? dropped : given_up);  // undecodable without the frames dropped before it
      ask_key = true;
    } else {
      pending_to_key_ = false;
      if (out_seq == 0) ++undecided_;
      pending_.push_back(Pending{std::move(f), rtp_ts, now, seq, out_seq});
    }
  }
  if (given_up > 0) {
    decodes_given_up_ += given_up;
    m_decodes_given_up_->Inc(double(given_up));
  }
  if (dropped > 0) {
    stale_ += dropped;
    evicted_ += dropped;
    m_stale_->Inc(double(dropped));
  }
  if (ask_key) AskPublisherForKeyframe();
  executor_->Ready(&executor_client_, now + cfg_.budget_ms);
}

void LiveSession::DecodeHandedOver() {
  // With a burst allowance, no more than the queue holds: a bunch of frames handed over together
  // is decoded as the privacy stage takes them, not all at once to evict the oldest (the next to
  // be due). Without, the newest frames win, as the deadlines say.
  while (cfg_.burst_allowance_ms <= 0 || queue_.size() < queue_.capacity()) {
    Pending p;
    {
      MutexLock lk(pending_mu_);
      if (pending_.empty()) return;
      p = std::move(pending_.front());
      pending_.pop_front();
    }
    DecodeAndQueue(std::move(p.frame), p.rtp_ts, &p);
    if (p.out_seq == 0) {
      MutexLock lk(pending_mu_);
      --undecided_;  // sent or queued now: the next frames may be forwarded on arrival
    }
  }
}

std::optional<double> LiveSession::NextDue() {
  std::optional<double> due = queue_.Front([](const Decoded& d) { return Due(d); });
  if (decode_on_executor_) {
    MutexLock lk(pending_mu_);
    if (!pending_.empty()) {
      const double d = pending_.front().handed_ms + cfg_.budget_ms;
      due = due ? std::min(*due, d) : d;
    }
  }
  return due;
}

void LiveSession::DecodeAndQueue(EncodedFrame&& f, uint32_t rtp_ts, const Pending* handed) {
  const double handed_ms = handed ? handed->handed_ms : -1;
  if (!handed) last_packet_ms_.store(NowMs());
  const uint64_t seq = handed ? handed->seq : ++ingest_seq_;
  const double t0 = NowMs(), cpu0 = ThreadCpuMs();
  std::vector<FramePtr> out;
  if (!decoder_->Decode(f.data.data(), f.data.size(), int64_t(rtp_ts), out).ok()) {
    ++decode_errors_;
    m_decode_errors_->Inc();
    AskPublisherForKeyframe();
  }
  const double t1 = NowMs();
  const double arrival = f.arrival_ms > 0 ? f.arrival_ms : t0;
  if (out.size() != 1) forwarding_ = forwarding_now_ = false;  // nothing the viewers could decode, or no 1:1
  for (auto& fr : out) {
    m_decode_->Observe(t1 - t0);
    const uint64_t index = ++frames_in_;
    m_in_->Inc();
    // The picture's own timestamp (a decoder that held it back hands it out with a later input).
    const uint32_t ts = uint32_t(fr->pts);
    // On the executor the frame's clock starts when it was handed over: its wait for the decode
    // counts against its budget, as the wait for the privacy stage does.
    const bool on_executor = handed_ms >= 0;
    const double start = on_executor ? handed_ms : t1;
    const double paced =
        paced_ms_ ? PacedHandOver(start, ts, *paced_ms_, paced_ts_, cfg_.burst_allowance_ms) : start;
    paced_ms_ = paced;
    paced_ts_ = ts;
    Decoded item{std::move(fr), seq, ts, start, on_executor ? t1 - t0 : 0.0, arrival, paced + cfg_.budget_ms, int64_t(index)};
    if (ts != rtp_ts) forwarding_ = forwarding_now_ = false;  // not this input's picture: nothing to pair it with
    if (handed && handed->out_seq > 0) {
      // Forwarded on arrival: the viewers have it; its picture is kept for snapshots.
      KeepOutput(std::move(item.frame), handed->out_seq, Mode::kBypass, false);
      continue;
    }
    if (ts == rtp_ts && out.size() == 1 && MaybeForward(f, item)) break;
    const double due = Due(item);
    if (queue_.Push(std::move(item))) {
      ++stale_;  // evicted: the worker fell behind
      ++evicted_;
      m_stale_->Inc();
    }
    if (executor_ && handed_ms < 0) executor_->Ready(&executor_client_, due);  // else: on the executor now
  }
  cpu_ms_.fetch_add(ThreadCpuMs() - cpu0);  // decode, and the send of a forwarded frame
}

void LiveSession::Work() {
  while (!stop_) {
    ApplyCommands();
    auto item = queue_.Pop(std::chrono::milliseconds(100));  // a posted command wakes it
    ApplyCommands();  // before the frame it took: the frame is processed as they say
    if (item && !RunItem(*item)) return;
  }
}

std::optional<double> LiveSession::RunOne() {
  // Commands first: the frames this turn decodes and processes see what they say.
  ApplyCommands();
  if (stop_) return std::nullopt;
  if (decode_on_executor_) {
    try {
      DecodeHandedOver();
    } catch (const std::exception& e) {
      Fail(std::string("decode failed: ") + e.what());
      stop_ = true;
    } catch (...) {
      Fail("decode failed: unknown exception");
      stop_ = true;
    }
    if (stop_) return std::nullopt;
  }
  if (auto item = queue_.TryPop(); item && !RunItem(*item)) {
    stop_ = true;  // failed: no more work (the owner ends the session)
    return std::nullopt;
  }
  return NextDue();
}

bool LiveSession::RunItem(Decoded& item) {
  const double cpu0 = ThreadCpuMs();
  try {
    ProcessOne(item);
    cpu_ms_.fetch_add(ThreadCpuMs() - cpu0);
    return true;
  } catch (const std::exception& e) {
    Fail(std::string("pipeline failed: ") + e.what());
  } catch (...) {
    Fail("pipeline failed: unknown exception");
  }
  return false;
}

double PacedHandOver(double handed_ms, uint32_t ts, double prev_paced_ms, uint32_t prev_ts, double allowance_ms) {
  const double step = std::clamp(double(int32_t(ts - prev_ts)) / 90.0, 0.0, allowance_ms);
  return std::clamp(prev_paced_ms + step, handed_ms, handed_ms + allowance_ms);
}

}  // namespace veil
