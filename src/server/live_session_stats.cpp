// What a live session reports (server/live_session.h): its stats, the once-a-second tick
// (rates, metrics, history) and the thumbnail of its last output.
#include "core/clock.h"
#include "server/live_session.h"

namespace veil {

Result<SessionSnapshot> LiveSession::Snapshot(int max_width) {
  Output o;
  {
    MutexLock lk(out_mu_);
    o = last_out_;  // a reference: the worker never writes to a frame once it has left
  }
  if (!o.frame) return Status::Error("no frame has left the session yet");
  MutexLock lk(snap_mu_);  // one encode at a time per session; others reuse it
  if (snap_cache_.frame != o.seq || snap_cache_width_ != max_width) {
    auto jpeg = EncodeThumbnail(*o.frame, max_width);
    if (!jpeg) return jpeg.status();
    snap_cache_ = {std::move(*jpeg), o.seq, o.mode, o.fail_closed, 0};
    snap_cache_width_ = max_width;
  }
  SessionSnapshot out = snap_cache_;
  out.age_ms = NowMs() - o.at_ms;
  return out;
}

LiveSessionStats LiveSession::stats() const {
  LiveSessionStats s;
  s.frames_in = frames_in_;
  s.frames_out = frames_out_;
  s.stale_drops = stale_;
  s.held_frames = uint64_t(m_held_->value());
  s.fast_cut_frames = uint64_t(m_fast_cuts_->value());
  s.recent_p99_ms = recent_p99_ms_;
  s.decode_errors = decode_errors_;
  s.resolution_changes = resolution_changes_;  // first: a count that includes a change comes with its size
  s.frames_forwarded = forwarded_;
  s.decodes_given_up = decodes_given_up_;
  s.publisher_keyframe_requests = publisher_key_requests_;
  s.forwarding = forwarding_now_;
  s.shed_level = shed_level_;
  s.max_shed_level = max_shed_level_;
  s.encoder_speed_step = enc_step_;
  s.detect_every = detect_every_;
  s.detect_trimmed = detect_trimmed_;
  // A verdict of a window long gone (the worker went idle: bypass forwarding, no publisher) is none.
  s.overloaded = overloaded_ && NowMs() - last_shed_ms_.load() < 3 * cfg_.speed.window_ms;
  s.falling_behind = s.overloaded && falling_behind_;
  s.shed_steps_up = shed_ups_;
  s.shed_early_verdicts = shed_early_;
  s.shed_steps_down = shed_downs_;
  s.shed_start_level = start_level_;
  {
    MutexLock lk(speed_name_mu_);
    s.encoder_speed = speed_name_;
  }
  s.width = out_w_;
  s.height = out_h_;
  s.viewers = sender_->viewers();
  s.viewer_drops = sender_->viewer_drops();
  s.viewer_detail = sender_->viewer_stats();
  if (receiver_) s.rtp = receiver_->stats();
  {
    MutexLock lk(web_mu_);
    if (whip_) {
      s.has_publisher = true;
      s.publisher = whip_->stats();
    }
    for (const auto& [k, v] : web_viewers_) s.web_viewers[k] = v.peer->stats();
  }
  if (audio_) s.audio = audio_->stats();
  const double now = NowMs();
  double last = last_packet_ms_.load();
  if (s.audio.last_packet_ms > last) last = s.audio.last_packet_ms;
  s.last_packet_age_ms = last < 0 ? -1 : now - last;
  s.age_ms = now - started_ms_;
  s.received_fps = fps_in_;
  s.sent_fps = fps_out_;
  const std::pair<const char*, const Histogram*> hs[] = {
      {"queue_wait", m_queue_}, {"decode", m_decode_}, {"preprocess", m_preprocess_}, {"detect", m_detect_},
      {"track", m_track_},      {"mosaic", m_mosaic_}, {"encode", m_encode_},         {"send", m_send_},
      {"cut_wait", m_cut_wait_}, {"processing", m_total_}};
  for (const auto& [name, h] : hs) {
    StageSummary& st = s.stages[name];
    st.count = h->count();
    if (st.count == 0) continue;
    st.mean_ms = h->sum() / double(st.count);
    st.p50_ms = h->Quantile(0.5);
    st.p99_ms = h->Quantile(0.99);
  }
  MutexLock lk(mu_);
  s.privacy = privacy_counters_;
  return s;
}

LiveSessionStats LiveSession::Tick() {
  const double now = NowMs();
  LiveSessionStats s = stats();
  const double dt = (now - tick_ms_) / 1000.0;
  if (dt >= 1.0) {  // rates over about a second
    fps_in_ = double(s.frames_in - tick_in_) / dt;
    fps_out_ = double(s.frames_out - tick_out_) / dt;
    m_fps_in_->Set(fps_in_);
    m_fps_out_->Set(fps_out_);
    tick_in_ = s.frames_in;
    tick_out_ = s.frames_out;
    tick_ms_ = now;
  }
  if (s.viewer_drops > tick_viewer_drops_) m_viewer_drops_->Inc(double(s.viewer_drops - tick_viewer_drops_));
  tick_viewer_drops_ = s.viewer_drops;
  if (s.rtp.lost > tick_lost_) m_lost_->Inc(double(s.rtp.lost - tick_lost_));
  tick_lost_ = s.rtp.lost;
  m_jitter_->Set(s.rtp.jitter_ms);
  recent_total_.Add(now, m_total_->cumulative());
  recent_p99_ms_ = recent_total_.Get(m_total_->bounds(), 0.99, 60);
  s.recent_p99_ms = recent_p99_ms_;
  if (history_.Due(now))  // the histogram snapshot only when a point is taken
    history_.Update(now, UnixMs(), {s.frames_in, uint64_t(s.privacy.fail_closed), s.stale_drops, m_total_->cumulative()});
  m_viewers_->Set(double(s.viewers));
  m_shed_level_->Set(double(s.shed_level));
  m_enc_step_->Set(double(s.encoder_speed_step));
  return s;
}

}  // namespace veil
