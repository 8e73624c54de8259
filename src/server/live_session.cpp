#include "server/live_session.h"

#include <algorithm>
#include <cmath>

#include "core/clock.h"
#include "core/thread_cpu.h"
#include "server/period_phases.h"

namespace veil {

LiveSession::LiveSession(const std::string& id, const LiveSessionConfig& c)
    : id_(id),
      cfg_(c),
      started_ms_(NowMs()),
      speed_(c.speed, c.budget_ms, 0),
      queue_(c.queue_frames),
      history_(c.history_points, c.history_interval_ms, LatencyBucketsMs()) {}

Result<std::unique_ptr<LiveSession>> LiveSession::Start(const std::string& id, const LiveSessionConfig& c,
                                                        DetectionSink* scheduler, uint64_t scheduler_session,
                                                        MetricsRegistry* metrics,
                                                        std::shared_ptr<FrameExecutor> executor) {
  if (!(c.budget_ms > 0 && c.budget_ms <= 10000)) return Status::Error("session budget must be in (0, 10000] ms");
  if (!(c.burst_allowance_ms >= 0 && c.burst_allowance_ms <= 1000))
    return Status::Error("session burst allowance must be in [0, 1000] ms");
  if (c.queue_frames < 1 || c.queue_frames > 64) return Status::Error("session queue must hold 1..64 frames");
  if (Status s = Validate(c.privacy); !s) return s;
  if (Status s = Validate(c.speed); !s) return s;
  if (!metrics) return Status::Error("a metrics registry is required");
  if (c.history_points < 1 || c.history_points > 100000 || !(c.history_interval_ms >= 10))
    return Status::Error("session history must hold 1..100000 points of at least 10 ms");
  std::unique_ptr<LiveSession> s(new LiveSession(id, c));
  s->metrics_ = metrics;
  if (c.take_back_budget) {
    LiveSession* self = s.get();  // the permit runs in Shed(), on the session's own worker
    s->speed_.set_take_back_permit([self, budget = c.take_back_budget](double now_ms) {
      return budget->TryTake(now_ms, kShedLevelCostShare * self->cpu_rate_ms_per_s_);
    });
  }
  s->mode_.store(c.privacy.mode);
  s->tick_ms_ = NowMs();
  const Labels l = {{"session", id}};
  auto stage = [&](const char* name) {
    Labels ls = l;
    ls.emplace_back("stage", name);
    return &metrics->GetHistogram("veil_session_stage_seconds", "Per-frame time of each live stage, s", LatencyBucketsMs(), ls,
                                  kMsToSeconds);
  };
  s->m_queue_ = stage("queue_wait");
  s->m_decode_ = stage("decode");
  s->m_preprocess_ = stage("preprocess");
  s->m_detect_ = stage("detect");
  s->m_track_ = stage("track");
  s->m_mosaic_ = stage("mosaic");
  s->m_cut_wait_ = stage("cut_wait");  // frames that waited for their own detection (privacy.cut_wait_ms)
  s->m_encode_ = stage("encode");
  s->m_send_ = stage("send");
  s->m_total_ = &metrics->GetHistogram(
      "veil_session_processing_seconds", "Server processing latency: first packet of a frame in -> its last packet out, s",
      LatencyBucketsMs(), l, kMsToSeconds);
  s->m_held_ = &metrics->GetCounter("veil_session_held_frames_total",
                                    "Frames sent as the previous output while a new shot's detection was on its way "
                                    "(privacy.cut_hold_frames), counted among the fail-closed ones too",
                                    l);
  s->m_fast_cuts_ = &metrics->GetCounter("veil_session_fast_cut_frames_total",
                                         "Frames that began a new picture (a scene cut), encoded at the fastest "
                                         "encoder speed (encoder.fast_cuts)",
                                         l);
  s->m_stale_ = &metrics->GetCounter("veil_session_stale_drops_total", "Frames dropped as stale before processing", l);
  s->m_fail_closed_ = &metrics->GetCounter("veil_session_fail_closed_frames_total",
                                           "Frames sent as a whole-frame mosaic for lack of a fresh detection", l);
  s->m_in_ = &metrics->GetCounter("veil_session_frames_received_total", "Frames received and decoded", l);
  s->m_out_ = &metrics->GetCounter("veil_session_frames_sent_total", "Frames handed to the viewers", l);
  s->m_keyframes_ = &metrics->GetCounter(
      "veil_session_keyframes_encoded_total",
      "Keyframes veil's encoder made (periodic at the session's phase, viewer joins, mode switches)", l);
  s->m_forwarded_ = &metrics->GetCounter("veil_session_frames_forwarded_total",
                                         "Frames sent as the publisher's own (bypass forwarding, no re-encode)", l);
  s->m_decodes_given_up_ = &metrics->GetCounter(
      "veil_session_decodes_given_up_total",
      "Forwarded frames whose decode was given up, the executor seconds behind (the viewers had them; "
      "the decoder resumed at the next keyframe)",
      l);
  s->m_viewer_drops_ =
      &metrics->GetCounter("veil_session_viewer_drops_total", "Frames a slow viewer dropped from its queue", l);
  s->m_lost_ = &metrics->GetCounter("veil_session_rtp_lost_packets_total", "Ingest RTP packets never received", l);
  s->m_decode_errors_ = &metrics->GetCounter("veil_session_decode_errors_total", "Ingest frames that failed to decode", l);
  s->m_fps_in_ = &metrics->GetGauge("veil_session_received_fps", "Frames received per second (last second)", l);
  s->m_fps_out_ = &metrics->GetGauge("veil_session_sent_fps", "Frames sent per second (last second)", l);
  s->m_jitter_ = &metrics->GetGauge("veil_session_rtp_jitter_seconds", "Ingest RTP inter-arrival jitter, s", l, kMsToSeconds);
  s->m_viewers_ = &metrics->GetGauge("veil_session_viewers", "Viewers subscribed", l);
  s->m_shed_level_ = &metrics->GetGauge(
      "veil_session_shed_level", "Load shedding level: 0 as configured, then encoder speed steps, the trimmed detection window, detection cadence", l);
  s->m_enc_step_ = &metrics->GetGauge("veil_session_encoder_speed_step",
                                      "The encoder's speed step (0 = the configured cpu-used or preset)", l);

  auto dec = VideoDecoder::Open(c.codec, c.decode_threads);
  if (!dec) return dec.status();
  s->decoder_ = std::move(*dec);
  s->privacy_ = std::make_unique<PrivacyStage>(c.privacy, scheduler, scheduler_session);
  s->detect_every_ = s->privacy_->current_every();
  s->detect_trimmed_ = s->privacy_->trimming();
  RtpSenderConfig sc;
  sc.codec = c.codec;
  sc.viewer_queue_frames = c.viewer_queue_frames;
  sc.on_sent = [p = s.get()](const RtpFrame& f, double ms) { p->OnSent(f, ms); };
  // A viewer lost frames: it waits for a keyframe. At most one forced keyframe a second.
  sc.on_drop = [p = s.get()] { p->RequestKeyframe(1000); };
  auto tx = RtpSender::Start(sc);
  if (!tx) return tx.status();
  s->sender_ = std::move(*tx);
  if (c.audio) {
    auto a = UdpRelay::Start(c.ingest_address);
    if (!a) return a.status();
    s->audio_ = std::move(*a);
  }
  if (executor) s->executor_ = std::move(executor);
  else s->worker_ = std::thread([p = s.get()] {
    NameThisThread("session");
    p->Work();
  });
  s->decode_on_executor_ = c.decode_on_executor && s->executor_;
  if (c.ingest == IngestKind::kWebRtc) return s;  // the WHIP publisher attaches later
  RtpReceiverConfig rc;
  rc.codec = c.codec;
  rc.latency_ms = c.jitter_ms;
  rc.address = c.ingest_address;
  auto rx = RtpReceiver::Start(rc, [p = s.get()](EncodedFrame&& f, uint32_t ts) { p->OnEncoded(std::move(f), ts); });
  if (!rx) return rx.status();  // the destructor stops the worker
  s->receiver_ = std::move(*rx);
  return s;
}

LiveSession::~LiveSession() {
  {
    MutexLock lk(web_mu_);
    whip_raw_ = nullptr;
    whip_.reset();  // no more frames from the publisher
  }
  receiver_.reset();  // no more frames from the network
  stop_ = true;
  queue_.Close();
  if (executor_) executor_->Remove(&executor_client_);  // its frame in flight, if any, ends first
  if (worker_.joinable()) worker_.join();
  sender_.reset();  // viewer threads end (they feed the WebRTC viewers)
  audio_.reset();
  web_viewers_.clear();
  metrics_->RemoveSeriesWithLabel("session", id_);
}

Status LiveSession::SetMode(Mode m, Mode* previous, double timeout_ms) {
  Mode was = m;
  auto apply = [this, m, &was] {
    // Under emit_mu_: a frame forwarded on arrival is sent, or not, wholly before the switch.
    MutexLock lk(emit_mu_);
    was = mode_.exchange(m);
  };
  // Posted, not called: the worker applies it between two frames, so no frame it is processing
  // (its mode read, its picture being encoded) can leave after this returns in the old mode.
  auto wake = [this] {
    if (executor_) executor_->Ready(&executor_client_, NowMs());  // before frames due later
    else queue_.Wake();
  };
  if (!commands_.PostAndWait(apply, wake, timeout_ms))
    return Status::Error(StatusCode::kUnavailable, "session '" + id_ + "' did not take the mode change within " +
                                                       std::to_string(int(timeout_ms)) + " ms (nothing changed)");
  if (previous) *previous = was;
  return Status::Ok();
}

void LiveSession::ApplyCommands() { commands_.ApplyAll(); }

void LiveSession::RequestKeyframe(double min_gap_ms) {
  const double now = NowMs();
  double last = last_keyframe_request_ms_.load();
  if (now - last > min_gap_ms && last_keyframe_request_ms_.compare_exchange_strong(last, now)) want_keyframe_ = true;
}

void LiveSession::Fail(const std::string& why) {
  MutexLock lk(mu_);
  if (error_.empty()) error_ = why;
}

std::string LiveSession::error() {
  for (std::string e : {receiver_ ? receiver_->PollError() : std::string(), sender_->PollError()})
    if (!e.empty()) Fail("transport: " + e);
  {
    MutexLock lk(web_mu_);
    if (whip_)
      if (std::string e = whip_->PollError(); !e.empty()) Fail("publisher: " + e);
  }
  MutexLock lk(mu_);
  return error_;
}

bool MayHoldPrevious(const FrameReport& rep, const Frame* previous, Mode previous_mode, const Frame& f,
                     int held_in_a_row, int max_hold) {
  return rep.fail_closed && rep.awaiting_shot && previous && previous_mode != Mode::kBypass &&
         previous->width == f.width && previous->height == f.height && held_in_a_row < max_hold;
}

int64_t DetectSlot(int64_t index, double arrived_ms, int cadence, double fps, double phase, double epoch_ms) {
  if (cadence <= 1 || !(fps > 0)) return 0;
  const double frame_ms = 1000.0 / fps;
  const double period_ms = cadence * frame_ms;
  const double at = PeriodPhases::NextAt(arrived_ms, epoch_ms, phase * period_ms, period_ms);
  const int64_t ahead = std::llround((at - arrived_ms) / frame_ms) % cadence;  // frames until the slot
  return ((-(index + ahead)) % cadence + cadence) % cadence;
}

void LiveSession::ProcessOne(Decoded& item) {
  const double start = NowMs();
  m_queue_->Observe(start - item.decoded_ms - item.decode_ms);
  if (start > Due(item)) {  // it could only leave late: drop before any work
    ++stale_;
    m_stale_->Inc();
    speed_.OnStale(start);
    return;
  }
  Shed(start);
  Frame& f = *item.frame;
  f.index = item.index;  // its own place in arrival order drives cadence and result age
  if (cfg_.detect_phase >= 0 && privacy_->current_every() != slot_cadence_) {
    // The first frame, or the cadence changed (shedding, auto cadence): place the slot again.
    slot_cadence_ = privacy_->current_every();
    privacy_->set_detect_slot(DetectSlot(f.index, item.decoded_ms, slot_cadence_, cfg_.privacy.fps,
                                         cfg_.detect_phase, cfg_.detect_epoch_ms));
  }
  const Mode mode = mode_.load();
  privacy_->set_mode(mode);
  const FrameReport rep = privacy_->Process(f);
  if (rep.fail_closed) m_fail_closed_->Inc();
  m_preprocess_->Observe(rep.ms_preprocess);
  if (rep.ms_detect > 0) m_detect_->Observe(rep.ms_detect);  // a detection result arrived for this frame
  m_track_->Observe(rep.ms_track);
  m_mosaic_->Observe(rep.ms_mosaic);
  if (rep.ms_wait > 0) m_cut_wait_->Observe(rep.ms_wait);
  if (rep.fail_closed && cfg_.privacy.cut_hold_frames > 0) {
    // Hold the previous output rather than show a whole-frame mosaic at a cut: it is already
    // anonymized, and an unchanged picture costs the encoder next to nothing.
    bool held = false;
    {
      MutexLock lk(out_mu_);
      if (MayHoldPrevious(rep, last_out_.frame.get(), last_out_.mode, f, held_run_, cfg_.privacy.cut_hold_frames)) {
        const int64_t index = f.index;
        CopyFrame(*last_out_.frame, f);
        f.index = index;
        held = true;
      }
    }
    if (held) {
      ++held_run_;
      m_held_->Inc();
    }
  } else if (!rep.fail_closed) {
    held_run_ = 0;
  }
  if (const double hog = inject_cpu_ms_.load(); hog > 0)
    for (const double c0 = ThreadCpuMs(); ThreadCpuMs() - c0 < hog;) {
    }
  const double t1 = NowMs();
  // The publisher changed resolution (a browser adapting to CPU or bandwidth, an encoder
  // restart): a new encoder at the new size, whose first frame is a keyframe.
  if (encoder_ && (f.width != enc_w_ || f.height != enc_h_)) encoder_.reset();
  if (!encoder_) {
    VideoInfo vi;
    vi.width = f.width;
    vi.height = f.height;
    vi.tb_num = 1;
    vi.tb_den = 90000;
    vi.fps = cfg_.privacy.fps;
    auto e = VideoEncoder::Open(cfg_.codec, vi, cfg_.encoder);
    if (!e) {
      Fail(std::string("cannot open the ") + Name(cfg_.codec) + " encoder: " + e.error());
      return;
    }
    encoder_ = std::move(*e);
    encoded_mode_.reset();
    enc_fast_cuts_seen_ = 0;
    enc_w_ = f.width;
    enc_h_ = f.height;
    trim_steps_ = cfg_.shed_trim ? privacy_->trim_steps(f.width, f.height) : 0;
    speed_.set_max_level(encoder_->max_speed_step() + trim_steps_ + privacy_->max_extra_every());
    enc_max_step_ = encoder_->max_speed_step();
    max_shed_level_ = speed_.max_level();
    Shed(t1);
  }
  f.pts = item.rtp_ts;
  std::vector<EncodedFrame> packets;
  // After forwarded frames the encoder's references are not what the viewers decoded.
  const uint64_t forwarded = forwarded_.load();
  // A new mode starts with a keyframe: an inter frame would carry the last mode's picture on.
  bool key = want_keyframe_.exchange(false) || forwarded != encoded_after_forward_ ||
             (encoded_mode_ && mode != *encoded_mode_);
  encoded_after_forward_ = forwarded;
  encoded_mode_ = mode;
  if (cfg_.keyframe_period_ms > 0 && item.decoded_ms >= next_keyframe_ms_) {
    // This session's periodic keyframe, at its phase; unless one went out less than half a
    // period ago (its first frame, a viewer's join), which counts for it.
    key = key || item.decoded_ms - last_keyframe_ms_ >= cfg_.keyframe_period_ms / 2;
    next_keyframe_ms_ = PeriodPhases::NextAt(item.decoded_ms + 1e-3, cfg_.first_keyframe_ms, 0,
                                               cfg_.keyframe_period_ms);
  }
  const double enc_cpu0 = ThreadCpuMs();
  if (Status s = encoder_->Encode(f, key, packets); !s) {
    Fail("encoder: " + s.message());
    return;
  }
  if (const int k = encoder_->speed_step(); k >= 0 && k < VideoEncoder::kMaxSpeedSteps) {
    enc_cpu_ms_[size_t(k)].fetch_add(ThreadCpuMs() - enc_cpu0);
    enc_frames_[size_t(k)].fetch_add(1);
  }
  if (const int64_t fc = encoder_->fast_cut_frames(); fc > enc_fast_cuts_seen_) {
    m_fast_cuts_->Inc(double(fc - enc_fast_cuts_seen_));
    enc_fast_cuts_seen_ = fc;
  }
  for (const EncodedFrame& p : packets)
    if (p.keyframe) {
      last_keyframe_ms_ = item.decoded_ms;
      m_keyframes_->Inc();
    }
  const double t2 = NowMs();
  m_encode_->Observe(t2 - t1);
  speed_.OnFrame(t2, t2 - item.decoded_ms);
  Emit(item, packets.data(), packets.size(), t2, &rep);
}

void LiveSession::Shed(double now_ms) {
  // Frames the receiving thread evicted from the queue were lost to the worker's lateness too.
  for (const uint64_t e = evicted_.load(); seen_evicted_ < e; ++seen_evicted_) speed_.OnStale(now_ms);
  if (const int hint = start_hint_.load(); hint > speed_.start_level() && speed_.StartAt(hint)) start_level_ = hint;
  speed_.set_node_room(node_room_.load());
  if (cpu_rate_since_ms_ < 0 || now_ms - cpu_rate_since_ms_ >= 1000) {
    const double cpu = cpu_ms_.load();
    if (cpu_rate_since_ms_ >= 0) cpu_rate_ms_per_s_ = (cpu - cpu_rate_mark_ms_) * 1000 / (now_ms - cpu_rate_since_ms_);
    cpu_rate_mark_ms_ = cpu;
    cpu_rate_since_ms_ = now_ms;
  }
  const int level = speed_.Level(now_ms);
  shed_warming_ = speed_.warming_up();
  // Encoder speed first, then the detection window trimmed to the detector's grid, then
  // detection cadence: a faster encoder costs picture quality alone; the trimmed window leaves a
  // few rows at the top and bottom unseen (a box there is extended over them); a sparser
  // detection widens every mask and leans on the tracker.
  const int enc_steps = encoder_ ? encoder_->max_speed_step() : 0;
  if (encoder_) {
    const int step = std::min(level, enc_steps);
    encoder_->SetSpeedStep(step);
    if (enc_step_.exchange(step) != step || speed_name_empty_) {
      MutexLock lk(speed_name_mu_);
      speed_name_ = encoder_->SpeedName(step);
      speed_name_empty_ = false;
    }
  }
  privacy_->set_shed_trim(trim_steps_ > 0 && level > enc_steps);
  privacy_->set_extra_every(std::max(0, level - enc_steps - trim_steps_));
  detect_every_ = privacy_->current_every();
  detect_trimmed_ = privacy_->trimming();
  shed_level_ = level;
  overloaded_ = speed_.overloaded();
  falling_behind_ = speed_.falling_behind();
  last_shed_ms_ = now_ms;
  shed_ups_ = speed_.steps_up();
  shed_downs_ = speed_.steps_down();
  shed_early_ = speed_.early_verdicts();
}

void LiveSession::OnSent(const RtpFrame& f, double sent_ms) {
  double arrival = 0, encoded = 0;
  {
    MutexLock lk(mu_);
    for (const Arrival& a : arrivals_)
      if (a.rtp == f.rtp_ts && a.ms > 0) {
        arrival = a.ms;
        encoded = a.encoded_ms;
      }
  }
  if (arrival <= 0) return;
  m_send_->Observe(sent_ms - encoded);
  m_total_->Observe(sent_ms - arrival);
}

}  // namespace veil
