#include "server/session_json.h"

#include "server/sdp.h"

namespace veil {
namespace {

using json = nlohmann::json;

json StageJson(const std::map<std::string, StageSummary>& stages) {
  json o = json::object();
  for (const auto& [name, s] : stages)
    o[name] = {{"count", s.count}, {"mean_ms", s.mean_ms}, {"p50_ms", s.p50_ms}, {"p99_ms", s.p99_ms}};
  return o;
}

}  // namespace

json StatsJson(const SessionInfo& s) {
  const LiveSessionStats& st = s.stats;
  json viewers = json::array();
  for (const ViewerInfo& v : s.viewers) {
    json jv = {{"id", v.id}, {"host", v.host}, {"video_port", v.video_port}, {"audio_port", v.audio_port}};
    auto it = st.viewer_detail.find(v.kind == ViewerKind::kWebRtc ? v.id : v.host + ":" + std::to_string(v.video_port));
    jv["kind"] = Name(v.kind);
    if (auto w = st.web_viewers.find(v.id); v.kind == ViewerKind::kWebRtc && w != st.web_viewers.end())
      jv.update({{"connection", w->second.state}, {"keyframe_requests", w->second.keyframe_requests},
                 {"audio_packets_sent", w->second.audio_packets}});
    if (it != st.viewer_detail.end())
      jv.update({{"frames_sent", it->second.frames_sent},
                 {"frames_dropped", it->second.frames_dropped},
                 {"packets_sent", it->second.packets_sent},
                 {"send_errors", it->second.send_errors},
                 {"queued", it->second.queued}});
    viewers.push_back(jv);
  }
  const double in = double(st.frames_in);
  return {{"id", s.id},
          {"mode", ModeName(s.mode)},
          {"uptime_s", st.age_ms / 1000.0},
          {"last_packet_age_ms", st.last_packet_age_ms},
          {"received_fps", st.received_fps},
          {"sent_fps", st.sent_fps},
          {"frames_received", st.frames_in},
          {"frames_sent", st.frames_out},
          {"frames_forwarded", st.frames_forwarded},
          {"decodes_given_up", st.decodes_given_up},
          {"forwarding", st.forwarding},
          {"publisher_keyframe_requests", st.publisher_keyframe_requests},
          {"stale_drops", st.stale_drops},
          {"stale_drop_ratio", in > 0 ? double(st.stale_drops) / in : 0.0},
          {"decode_errors", st.decode_errors},
          {"width", st.width},
          {"height", st.height},
          {"resolution_changes", st.resolution_changes},
          {"fail_closed_frames", st.privacy.fail_closed},
          {"detections_run", st.privacy.detections_run},
          {"detect_failures", st.privacy.detect_failures},
          {"detect_results_dropped", st.privacy.results_dropped},
          {"scene_cuts", st.privacy.scene_cuts},
          {"cut_waits", st.privacy.cut_waits},
          {"cut_wait_timeouts", st.privacy.cut_wait_timeouts},
          {"held_frames", st.held_frames},
          {"fast_cut_frames", st.fast_cut_frames},
          {"recent_p99_ms", st.recent_p99_ms},
          {"doubtful_detections", st.privacy.doubtful_detections},
          {"shedding",
           {{"level", st.shed_level},
            {"max_level", st.max_shed_level},
            {"encoder_speed_step", st.encoder_speed_step},
            {"encoder_speed", st.encoder_speed},
            {"detect_every", st.detect_every},
            {"detect_trimmed", st.detect_trimmed},
            {"overloaded", st.overloaded},
            {"falling_behind", st.falling_behind},
            {"steps_up", st.shed_steps_up},
            {"early_verdicts", st.shed_early_verdicts},
            {"steps_down", st.shed_steps_down},
            {"start_level", st.shed_start_level}}},
          {"rtp",
           {{"packets", st.rtp.packets},
            {"lost", st.rtp.lost},
            {"late", st.rtp.late},
            {"jitter_ms", st.rtp.jitter_ms},
            {"foreign", st.rtp.foreign},
            {"ssrc_changes", st.rtp.ssrc_changes},
            {"restarts", st.rtp.restarts}}},
          {"audio",
           {{"packets", st.audio.packets_in}, {"forwarded", st.audio.packets_forwarded}, {"invalid", st.audio.invalid}}},
          {"viewer_drops", st.viewer_drops},
          {"viewers", viewers},
          {"publisher",
           st.has_publisher ? json{{"connection", st.publisher.state},
                                   {"frames", st.publisher.frames},
                                   {"audio_packets", st.publisher.audio_packets},
                                   {"keyframe_requests", st.publisher.keyframe_requests},
                                   {"plis", st.publisher.plis},
                                   {"packets", st.publisher.jitter_buffer.packets},
                                   {"lost", st.publisher.jitter_buffer.lost},
                                   {"late", st.publisher.jitter_buffer.late},
                                   {"nacks", st.publisher.jitter_buffer.rtx_requests},
                                   {"recovered", st.publisher.jitter_buffer.rtx_recovered},
                                   {"jitter_ms", st.publisher.jitter_buffer.jitter_ms}}
                            : json(nullptr)},
          {"stages_ms", StageJson(st.stages)},
          {"ai_target", s.target}};
}

json SessionJson(const SessionInfo& s, bool with_stats) {
  json viewers = json::array();
  for (const ViewerInfo& v : s.viewers)
    viewers.push_back({{"id", v.id}, {"kind", Name(v.kind)}, {"host", v.host}, {"video_port", v.video_port}, {"audio_port", v.audio_port}});
  json j = {{"id", s.id},
            {"codec", Name(s.codec)},
            {"ingest_type", Name(s.ingest)},
            {"publisher", s.publisher.empty() ? json(nullptr) : json("/whip/" + s.id + "/" + s.publisher)},
            {"mode", ModeName(s.mode)},
            {"created", s.created},
            {"ai_target", s.target},
            {"ingest",
             {{"host", s.ingest_host},
              {"video_port", s.video_port},
              {"audio_port", s.audio_port},
              {"video_payload_type", kVideoPayloadType},
              {"audio_payload_type", kOpusPayloadType},
              {"sdp", MakeSdp({"veil ingest " + s.id, s.ingest_host, s.codec, s.video_port, s.audio_port, "recvonly"})}}},
            {"viewers", viewers}};
  if (with_stats) j["stats"] = StatsJson(s);
  return j;
}

}  // namespace veil
