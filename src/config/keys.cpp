// The key table: every key veil understands, bound to a field of one stage's struct (Settings
// in config.h). Text keys (sizes, 'auto' or a number, lists, HOST:PORT) are parsed here, when set.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

#include "config/config.h"

namespace veil {
namespace {

// A key bound to a field of one stage's struct: `field` maps the whole configuration to it.
// Integers are stored as they are when they fit the field (an out-of-range value stays out of
// range, for the stage's Validate() to name); the ranges themselves are the stages'.
template <typename F>
KeySpec Key(std::string key, std::string flag, std::string doc, F field) {
  using T = std::remove_cv_t<std::remove_reference_t<decltype(field(std::declval<Settings&>()))>>;
  constexpr bool kInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;
  using Stored = std::conditional_t<kInt, int64_t,
                                    std::conditional_t<std::is_floating_point_v<T>, double,
                                                       std::conditional_t<std::is_same_v<T, bool>, bool, std::string>>>;
  static_assert(std::is_same_v<Stored, std::string> == std::is_same_v<T, std::string>, "unsupported field type");
  Settings defaults;
  KeySpec k;
  k.key = std::move(key);
  k.flag = std::move(flag);
  k.doc = std::move(doc);
  k.def = Value(Stored(field(defaults)));
  k.set = [field](Settings& s, const Value& v) {
    const Stored x = std::get<Stored>(v);
    if constexpr (kInt) {
      // Clamped far outside every stage's range, so that an absurd value is still refused by it.
      const int64_t lo = std::is_signed_v<T> ? -1000000000 : 0;
      field(s) = T(std::clamp<int64_t>(x, lo, 1000000000));
    } else {
      field(s) = T(x);
    }
    return Status::Ok();
  };
  k.get = [field](const Settings& s) { return Value(Stored(field(s))); };
  return k;
}

// A key whose text is parsed into a typed field (a size, 'auto' or a number, a list).
KeySpec TextKey(std::string key, std::string flag, std::string doc,
                std::function<Status(Settings&, const std::string&)> parse,
                std::function<std::string(const Settings&)> format) {
  KeySpec k;
  k.key = std::move(key);
  k.flag = std::move(flag);
  k.doc = std::move(doc);
  k.def = Value(format(Settings{}));
  k.set = [parse](Settings& s, const Value& v) { return parse(s, std::get<std::string>(v)); };
  k.get = [format](const Settings& s) { return Value(format(s)); };
  return k;
}

// 'auto' -> 0, or a whole number (not range-checked here).
Result<int> AutoOrInt(const std::string& t) {
  if (t == "auto") return 0;
  int64_t n = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), n);
  if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size())
    return Status::Error("must be 'auto' or a whole number, got '" + t + "'");
  return int(std::clamp<int64_t>(n, -1000000000, 1000000000));
}

std::string IntOrAuto(int n) { return n == 0 ? "auto" : std::to_string(n); }

// A key that is 'auto' (stored as 0) or a whole number of `unit` of at least 1, bound to an int
// field; its upper bound is the stage's.
template <typename F>
KeySpec AutoKey(std::string key, std::string flag, std::string doc, std::string unit, F field) {
  return TextKey(
      std::move(key), std::move(flag), std::move(doc),
      [field, unit](Settings& s, const std::string& t) -> Status {
        auto n = AutoOrInt(t);
        if (!n || (t != "auto" && *n < 1))
          return Status::Error("must be 'auto' or a number of " + unit + " (0 is degenerate), got '" + t + "'");
        field(s) = *n;
        return Status::Ok();
      },
      [field](const Settings& s) { return IntOrAuto(field(s)); });
}

// HOST:PORT with a port in [0, 65535].
Status ParseHostPort(const std::string& t, std::string* host, int* port) {
  const auto colon = t.rfind(':');
  if (colon == std::string::npos || colon == 0) return Status::Error("must be HOST:PORT, got '" + t + "'");
  int p = -1;
  const char* b = t.data() + colon + 1;
  const char* e = t.data() + t.size();
  auto r = std::from_chars(b, e, p);
  if (b == e || r.ec != std::errc() || r.ptr != e || p < 0 || p > 65535)
    return Status::Error("port must be in [0, 65535], got '" + t + "'");
  *host = t.substr(0, colon);
  *port = p;
  return Status::Ok();
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) {
    if (!out.empty()) out += ',';
    out += x;
  }
  return out;
}

}  // namespace

Result<cv::Size> ParseSize(const std::string& s) {
  const auto x = s.find('x');
  int w = 0, h = 0;
  if (x != std::string::npos) {
    auto r1 = std::from_chars(s.data(), s.data() + x, w);
    auto r2 = std::from_chars(s.data() + x + 1, s.data() + s.size(), h);
    if (r1.ec == std::errc() && r1.ptr == s.data() + x && r2.ec == std::errc() && r2.ptr == s.data() + s.size())
      return cv::Size(w, h);
  }
  return Status::Error("size must look like WxH, got '" + s + "'");
}

std::string FormatValue(const Value& v) {
  switch (v.index()) {
    case 0: return std::to_string(std::get<int64_t>(v));
    case 1: {
      std::ostringstream o;
      o << std::get<double>(v);
      std::string s = o.str();
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      return s;
    }
    case 2: return std::get<bool>(v) ? "true" : "false";
    default: return "\"" + std::get<std::string>(v) + "\"";
  }
}

const std::vector<KeySpec>& ConfigKeys() {
// A field of the configuration, read through a const Settings and written through a mutable one.
#define F(path) [](auto& s) -> auto& { return s.path; }
  static const std::vector<KeySpec> keys = {
      TextKey("privacy.mode", "mode", "anonymize | bypass | full_blur",
              [](Settings& s, const std::string& t) -> Status {
                auto m = ParseMode(t);
                if (!m) return m.status();
                s.privacy.mode = *m;
                return Status::Ok();
              },
              [](const Settings& s) { return ModeName(s.privacy.mode); }),
      TextKey("privacy.detect_size", "detect-size", "box the detection copy fits in, WxH (aspect kept)",
              [](Settings& s, const std::string& t) -> Status {
                auto box = ParseSize(t);
                if (!box) return box.status();
                s.privacy.detect_box = *box;
                return Status::Ok();
              },
              [](const Settings& s) {
                return std::to_string(s.privacy.detect_box.width) + "x" + std::to_string(s.privacy.detect_box.height);
              }),
      Key("privacy.detect_trim", "detect-trim", "the detector sees the copy trimmed to its 32-px grid when that takes at most 3% of a side, centred (640x360 -> 640x352: 14% less detection work, 8 px of a 720p frame's top and bottom unseen), instead of padded up (640x384)", F(privacy.detect_trim)),
      AutoKey("privacy.detect_every", "detect-every", "detect every N frames, or 'auto' (by detect_budget_ms)", "frames", F(privacy.detect_every)),
      Key("privacy.detect_budget_ms", "detect-budget", "auto cadence: detection ms per frame to aim for", F(privacy.detect_budget_ms)),
      Key("privacy.max_age_ms", "max-age-ms", "older detection result -> whole-frame mosaic (fail-closed)", F(privacy.max_result_age_ms)),
      Key("privacy.scene_cut", "scene-cut", "a scene cut forces detection on that frame", F(privacy.scene_cut)),
      Key("privacy.scene_cut_threshold", "", "mean abs luma difference of 32x18 thumbnails that is a cut", F(privacy.scene_cut_threshold)),
      Key("privacy.cut_hold_frames", "cut-hold-frames", "live: a frame that fails closed only because its new shot's detection is on its way (a scene cut) leaves as the session's previous output (already anonymized) instead of a whole-frame mosaic, at most this many in a row (0: never)", F(privacy.cut_hold_frames)),
      Key("privacy.detect_slack_ms", "detect-slack-ms", "live, with server.detect_on_executor: a detection on the cadence (the frame already has fresh masks) is ordered on the frame executor this much after the frames handed over with it, so frames due sooner go first; its result may come back later and the tracker carries the masks (a first frame's, a scene cut's or a retry's has none), [0, max_result_age_ms / 2) ms", F(privacy.detect_slack_ms)),
      Key("privacy.cut_wait_ms", "cut-wait-ms", "live: a frame with no detection of its picture yet (a scene cut, the first frame) waits up to this long for its own before it would leave as a whole-frame mosaic (0: no wait)", F(privacy.cut_wait_ms)),
      AutoKey("mosaic.cell", "cell", "'auto' (adapts to the face) or a fixed cell size in px", "pixels", F(privacy.mosaic.fixed_cell)),
      Key("mosaic.cells_across", "cells-across", "adaptive mosaic: cells across a face", F(privacy.mosaic.cells_across)),
      Key("mosaic.min_cell", "min-cell", "adaptive mosaic: smallest cell, px", F(privacy.mosaic.min_cell)),
      Key("mosaic.full_cell", "full-cell", "cell of whole-frame mosaic (full_blur, fail-closed), px", F(privacy.mosaic.full_frame_cell)),
      Key("mosaic.margin", "margin", "grow each face box by this fraction per side", F(privacy.mosaic.margin)),
      Key("mosaic.margin_min", "margin-min", "...and by at least this many pixels of the detection copy per side", F(privacy.mosaic.margin_min)),
      Key("mosaic.round", "round-masks", "round each face mask's corners: the face's ellipse swept over its motion bound (false: the whole rectangle)", F(privacy.mosaic.round)),
      Key("mosaic.round_scale", "", "...the face's ellipse scaled by this within the rectangle (1: inscribed in the face box plus margin; 1.4142: the whole rectangle)", F(privacy.mosaic.round_scale)),
      Key("tracker.score", "score", "detection score that starts a track", F(privacy.tracker.high_score)),
      Key("tracker.low_score", "low-score", "lowest detection score kept (matched to tracks, masked)", F(privacy.tracker.low_score)),
      Key("tracker.max_coast", "max-coast", "frames a track survives without a detection", F(privacy.tracker.max_coast_frames)),
      Key("tracker.weak_coast", "", "...or this many, when no detection of it reached tracker.score", F(privacy.tracker.weak_coast_frames)),
      Key("tracker.growth_base", "", "a mask grows by this fraction of the face per side", F(privacy.tracker.growth_base)),
      Key("tracker.growth_per_frame", "", "...plus this fraction per frame since the face's last detection", F(privacy.tracker.growth_per_frame)),
      Key("tracker.large_share", "", "a face whose box's smaller side passes this share of the frame's smaller side is 'large' (0: no rule)", F(privacy.tracker.large_share)),
      Key("tracker.doubtful_match", "", "a detection the second look doubted may keep an existing track alive (false: ignored)", F(privacy.tracker.doubtful_match)),
      Key("tracker.doubtful_birth", "", "a detection the second look doubted starts a tentative track, never confirmed by doubted ones (false: none)", F(privacy.tracker.doubtful_birth)),
      Key("tracker.large_misses", "", "...and is not masked while this many detections in a row miss it", F(privacy.tracker.large_misses)),
      Key("detector.family", "detector", "yunet | ultraface", F(detector.family)),
      Key("detector.model", "model", "model file (default: $VEIL_MODEL_DIR, data dir, assets, embedded)", F(detector.model_path)),
      Key("detector.model_sha256", "model-sha256", "accept a model file with this sha256 (custom models)", F(detector.model_sha256)),
      Key("detector.threads", "threads", "OpenCV threads inside one detector", F(detector.threads)),
      Key("detector.engine", "detector-engine", "yunet's forward pass: native (veil's kernels, one thread), opencv (OpenCV DNN), or auto (native at one thread)", F(detector.engine)),
      Key("detector.nms_iou", "", "non-maximum suppression IoU", F(detector.nms_iou)),
      Key("detector.second_look", "second-look", "a detection under detector.second_look_below starts no track unless YuNet, shown a crop around it scaled up, scores this (0: off)", F(detector.second_look.score)),
      Key("detector.second_look_below", "", "...detections under this score get the second look (tracker.score)", F(detector.second_look.below)),
      Key("detector.second_look_side", "", "...the crop's side in pixels (a multiple of 32)", F(detector.second_look.side)),
      Key("detector.second_look_context", "", "...the crop's side in detection-box sides", F(detector.second_look.context)),
      Key("detector.second_look_crops", "", "...at most this many crops per image (the rest are kept unasked)", F(detector.second_look.max_crops)),
      Key("encoder.codec", "codec", "vp8 | h264 | rawvideo (empty: from the output extension)", F(encoder.codec)),
      Key("encoder.bitrate_kbps", "bitrate", "video bitrate, kbps (0: by resolution)", F(encoder.bitrate_kbps)),
      Key("encoder.threads", "encode-threads", "encoder threads (veil serve: keep 1 on a loaded node, docs/figures.md \"Encoder threads\")", F(encoder.threads)),
      Key("encoder.keyint", "keyint", "a keyframe at least every N frames", F(encoder.keyint_frames)),
      Key("encoder.fast_cuts", "fast-cuts", "live vp8: a scene cut's first frame is encoded at cpu-used 16, then at its step's speed again", F(encoder.fast_cuts)),
      Key("encoder.vp8_speed", "vp8-speed", "libvpx cpu-used: -16..-1 fixed speed, 1..16 adaptive", F(encoder.vp8_speed)),
      Key("encoder.vp8_static_steps", "vp8-static-steps", "live vp8: the load-adaptive speed's steps past cpu-used 10 raise libvpx's static threshold (a macroblock its prediction matches within it is sent as predicted: 1000 at cpu-used 10 and 14, then 3000 at 14) instead of cpu-used up to 16 (false)", F(encoder.vp8_static_steps)),
      Key("decoder.threads", "decode-threads", "decoder threads", F(decode_threads)),
      TextKey("server.listen", "listen", "control API address HOST:PORT (non-loopback needs server.token)",
              [](Settings& s, const std::string& t) { return ParseHostPort(t, &s.server.listen_host, &s.server.listen_port); },
              [](const Settings& s) { return s.server.listen_host + ":" + std::to_string(s.server.listen_port); }),
      Key("server.token", "token", "bearer token the control API requires (empty: none, loopback only)", F(server.token)),
      TextKey("server.allowed_hosts", "allowed-hosts", "host names the API and pages answer to besides IP literals and localhost, comma-separated (DNS rebinding guard)",
              [](Settings& s, const std::string& t) -> Status {
                std::vector<std::string> names;
                for (size_t pos = 0; pos < t.size();) {
                  size_t end = t.find(',', pos);
                  if (end == std::string::npos) end = t.size();
                  std::string name = t.substr(pos, end - pos);
                  name.erase(0, name.find_first_not_of(' '));
                  name.erase(name.find_last_not_of(' ') + 1);
                  pos = end + 1;
                  if (name.empty()) continue;
                  for (char& c : name) {
                    c = char(std::tolower(static_cast<unsigned char>(c)));
                    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.')
                      return Status::Error("'" + name + "' is not a host name (letters, digits, - and . only)");
                  }
                  names.push_back(name);
                }
                s.server.allowed_hosts = std::move(names);
                return Status::Ok();
              },
              [](const Settings& s) { return Join(s.server.allowed_hosts); }),
      Key("server.rtp_address", "rtp-address", "address RTP ingest binds and the SDPs advertise", F(server.rtp_address)),
      TextKey("server.viewer_hosts", "viewer-hosts", "where viewers may receive RTP: loopback or any",
              [](Settings& s, const std::string& t) -> Status {
                if (t != "loopback" && t != "any") return Status::Error("must be loopback or any, got '" + t + "'");
                s.server.any_viewer_host = t == "any";
                return Status::Ok();
              },
              [](const Settings& s) { return std::string(s.server.any_viewer_host ? "any" : "loopback"); }),
      AutoKey("server.max_sessions", "max-sessions", "'auto' (as many as the measured capacity carries) or a fixed number of concurrent sessions; one more is refused with 503", "sessions", F(server.max_sessions)),
      Key("server.cores", "cores", "cores the capacity model counts on (0: the process's CPU affinity and cgroup quota)", F(server.cores)),
      Key("server.admit_p99_ms", "admit-p99-ms", "max_sessions = auto: no new session while a running one's processing p99 over its last 5 s is above this, ms (0: off)", F(server.admit_p99_ms)),
      Key("server.admit_speed_step", "admit-speed-step", "max_sessions = auto: a re-encoding session is costed with its encoder at this speed step of its ladder (0: the configured speed; 1: vp8 cpu-used -10, h264 superfast, about -0.6 dB; 2: vp8 cpu-used -10 static 1000, about -1 dB, h264 ultrafast, -5.6 dB; 3: vp8 cpu-used -14 static 1000, about -3 dB; a step past a codec's ladder plans its last, h264's ultrafast): the configured speed's encode cost as the sessions measured it, less the share of it this step saves (in a standalone encode of the same pictures timed at startup, or in the sessions' own encodes, whichever saves more)", F(server.admit_speed_step)),
      Key("server.retime_s", "retime-s", "the standalone transcode (the limit, and what the capacity model's costs are multiples of) is timed again whenever the node has been idle this long, s; the model takes the cheapest of the last 3 timings, so one slow read does not move it (0: timed at startup only)", F(server.retime_s)),
      Key("server.retime_first_s", "retime-first-s", "until the node keeps 3 timings (startup's and two more), an idle node times its transcode again after this long instead of server.retime_s, s, so a start whose one timing read high is outvoted within seconds (0: server.retime_s throughout)", F(server.retime_first_s)),
      Key("server.capacity_state", "capacity-state", "a file where the node keeps what its capacity model learned from its sessions, read at startup, so a restarted node admits by it instead of starting again from the priors (used only on the same CPU model, cores, build and cost settings; empty: none)", F(server.capacity_state)),
      Key("server.cpu_share", "cpu-share", "share of those cores sessions may take before new ones are refused (max_sessions = auto)", F(server.cpu_share)),
      Key("server.drain_timeout_s", "drain-timeout-s", "SIGTERM or POST /v1/drain: running sessions may go on this long, s (0: SIGTERM ends them at once)", F(server.drain_timeout_s)),
      Key("server.bypass_forward", "", "bypass forwards the publisher's frames (a decode, no re-encode); false: re-encode them", F(server.bypass_forward)),
      Key("server.shed", "shed", "under overload shed in order: encoder speed, the trimmed detection window, detection cadence (inside the privacy bound), new viewers, then the newest session; false: never", F(server.shed)),
      Key("server.shed_trim", "", "one shed level, after the encoder's and before detection cadence, shows the detector its copy trimmed to its 32-px grid (as privacy.detect_trim); false: no such level", F(server.shed_trim)),
      Key("server.shed_calm_s", "", "seconds of headroom before a shed level is taken back (doubles when taking one back overloads again)", F(server.shed_calm_s)),
      Key("server.shed_warmup_s", "", "a session's first seconds are not judged for shedding: its first keyframe, first detection and the jitter buffer's first burst are late by themselves (0: judge from the first window)", F(server.shed_warmup_s)),
      Key("server.shed_take_back_in_budget", "", "a session's calm stretch takes a shed level back only while the process's CPU in its last second, plus the levels granted since, plus what this one adds (a share of the session's own CPU), fits in the node's budget (the cores x server.cpu_share): sessions that grow calm together take back what the node has room for, not every level at once; studied and off by default, see docs/capacity.md (false: each session by its own latency alone)", F(server.shed_take_back_in_budget)),
      Key("server.shed_judge_early", "", "a shedding window is judged as soon as the frames it holds already decide that it overuses: enough of them later than the whole frame interval, or stale, that the p90 or the stale share of a window as long as the last one is past it whatever follows; the same verdict, up to a second sooner (at least 250 ms into the window; not in a session's warm-up nor at its last level; frames late against server.shed_high but in time still wait for the window's end). Studied and off by default, see docs/capacity.md (false: at the window's end only)", F(server.shed_judge_early)),
      Key("server.shed_start_by_load", "", "a session whose start takes the node's predicted load past its budget (the cores x server.cpu_share) with the starting sessions' encoders at the configured speed starts at the lowest encoder step at which they fit, up to the plan step (server.admit_speed_step, each codec's own), as do the sessions still in their warm-up beside it; calm windows take the levels back (false: every session starts as configured)", F(server.shed_start_by_load)),
      Key("server.shed_high", "", "a window overuses (one shed level more) when its p90 frame latency, decoded to encoded, passes this share of the frame interval, or when over 5% of its frames went stale", F(server.shed_high)),
      Key("server.shed_low", "", "a window is calm when its p90 frame latency is under this share of the frame interval and no frame went stale", F(server.shed_low)),
      Key("server.shed_low_with_room", "", "while the node's CPU in its last second left room in its budget (the cores x server.cpu_share) for one more default session's planned cost, a window is also calm when its p90 frame latency is under this share of the frame interval and no frame went stale: a lone 720p session's own work takes 0.4-0.5 of the interval on a small node, so a level it took for a passing load was never given back under shed_low alone (at or under shed_low: no such rule; at or over shed_high: any window that does not overuse)", F(server.shed_low_with_room)),
      Key("server.max_viewers", "max-viewers", "viewers per session", F(server.max_viewers)),
      Key("server.viewer_queue", "viewer-queue", "frames queued per viewer before it drops to a keyframe", F(server.viewer_queue)),
      Key("server.jitter_ms", "jitter-ms", "ingest jitter buffer depth, ms", F(server.jitter_ms)),
      Key("server.budget_ms", "budget-ms", "a frame this old after decoding (with server.decode_on_executor: after its hand-over to the executor) is dropped as stale, ms", F(server.budget_ms)),
      Key("server.burst_allowance_ms", "burst-allowance-ms", "WebRTC ingest: frames handed over bunched (a retransmission held back the frames after a lost packet) each keep the deadline their own spacing gives (RTP timestamps), at most this much after their hand-over; 0: every frame's deadline is its hand-over + budget_ms, ms", F(server.burst_allowance_ms)),
      Key("server.publisher_timeout_ms", "publisher-timeout-ms", "no packet for this long ends a session, ms", F(server.publisher_timeout_ms)),
      Key("server.start_timeout_ms", "start-timeout-ms", "a session with no packet this long after creation ends, ms", F(server.start_timeout_ms)),
      Key("server.history_s", "history-s", "per-session history of the figures kept for the operator page, s", F(server.history_s)),
      Key("server.history_interval_ms", "history-interval-ms", "one history point per this interval, ms (at least the 250-ms housekeeping tick)", F(server.history_interval_ms)),
      Key("server.http_max_connections", "http-max-connections", "control API connections open at once; more are closed on arrival", F(server.http_max_connections)),
      Key("server.http_threads", "http-threads", "control API handler threads (/healthz is answered apart from them)", F(server.http_threads)),
      Key("server.frame_executor", "frame-executor", "sessions' frames (their decode with server.decode_on_executor, privacy stage and encode) run on one pool of threads, earliest deadline first; false: a worker thread per session, the decode on the ingest thread", F(server.frame_executor)),
      Key("server.stagger_detections", "stagger-detections", "sessions' detections (every privacy.detect_every frames) are spread over the detection period, so the inference thread takes them one at a time instead of in a burst; false: wherever each session's first frame put them", F(server.stagger_detections)),
      Key("server.decode_on_executor", "decode-on-executor", "with server.frame_executor: each session's decode runs on the executor with the rest of its frame's work, earliest deadline first; false: on the session's ingest thread", F(server.decode_on_executor)),
      Key("server.detect_on_executor", "detect-on-executor", "with server.frame_executor and 2 or more frame threads: the in-process AI target's detections run on the frame executor, each batch due as a frame handed over when its oldest request was submitted; false: on the target's own inference threads ([inference] threads)", F(server.detect_on_executor)),
      Key("server.stagger_keyframes", "stagger-keyframes", "sessions' periodic keyframes (every encoder.keyint frames) are spread over the period, not on the same frame; false: each encoder's own cadence", F(server.stagger_keyframes)),
      Key("server.frame_threads", "frame-threads", "the frame executor's threads; 0: the usable cores (cgroup quota or affinity, rounded up)", F(server.frame_threads)),
      Key("server.http_request_timeout_ms", "http-request-timeout-ms", "a request's head, its body, and its answer must each go through within this, ms", F(server.http_request_timeout_ms)),
      Key("server.http_idle_timeout_ms", "http-idle-timeout-ms", "a kept-alive connection with no new request this long is closed, ms", F(server.http_idle_timeout_ms)),
      Key("inference.max_batch", "max-batch", "frames per forward pass, across sessions", F(inference.max_batch)),
      Key("inference.nice", "infer-nice", "the inference threads' nice value (veil worker; veil serve with server.detect_on_executor off), 0..19: above 0 the frames' threads go first when the cores are short (a detection may come back up to the privacy bound late, a frame's encode may not)", F(inference.nice)),
      Key("inference.max_wait_us", "max-wait-us", "how long a partial batch waits for more frames (not with server.detect_on_executor: a batch is what waits), us", F(inference.max_wait_us)),
      Key("inference.threads", "infer-threads", "inference threads, one detector each (veil worker; veil serve with server.detect_on_executor off)", F(inference.threads)),
      Key("inference.max_queue", "infer-queue", "pending detection requests across sessions", F(inference.max_queue)),
      Key("inference.fault_injection", "", "allow PUT /v1/debug/inference to stall or fail detection (tests only)", F(fault_injection)),
      TextKey("inference.targets", "targets", "AI targets, comma-separated: local and/or HOST:PORT of KServe v2 gRPC workers",
              [](Settings& s, const std::string& t) -> Status {
                auto targets = ParseTargets(t);
                if (!targets) return targets.status();
                s.server.targets = std::move(*targets);
                return Status::Ok();
              },
              [](const Settings& s) {
                std::vector<std::string> names;
                for (const auto& t : s.server.targets) names.push_back(t.name);
                return Join(names);
              }),
      Key("inference.remote_model", "remote-model", "model name at remote targets: yunet_u8 (UINT8 NHWC) or yunet (FP32 NCHW, Triton)", F(server.remote_model)),
      Key("inference.remote_threads", "remote-threads", "detection calls in flight per remote target", F(server.remote_threads)),
      Key("inference.deadline_ms", "deadline-ms", "remote detection call deadline; a later answer marks the target down, ms", F(server.deadline_ms)),
      Key("inference.probe_interval_ms", "probe-interval-ms", "AI target health probe interval, ms", F(server.probe_interval_ms)),
      Key("inference.probe_timeout_ms", "probe-timeout-ms", "a probe unanswered this long marks the target down, ms", F(server.probe_timeout_ms)),
      Key("cluster.redis", "redis", "redis://HOST:PORT[/DB] of the node registry (empty: a standalone node)", F(server.cluster_redis)),
      Key("cluster.node_id", "node-id", "this node's id in the registry (empty: HOSTNAME-PORT)", F(server.cluster_node_id)),
      Key("cluster.public_url", "public-url", "the URL clients reach this node's API, WHIP and WHEP at (empty: http://LISTEN)", F(server.cluster_public_url)),
      Key("worker.listen", "listen", "veil worker: gRPC address HOST:PORT (the protocol has no authentication)", F(worker.listen)),
      TextKey("worker.metrics_listen", "metrics-listen", "veil worker: HTTP address for /metrics and /healthz (empty: none)",
              [](Settings& s, const std::string& t) -> Status {
                if (t.empty()) {
                  s.worker.metrics_host.clear();
                  s.worker.metrics_port = 0;
                  return Status::Ok();
                }
                return ParseHostPort(t, &s.worker.metrics_host, &s.worker.metrics_port);
              },
              [](const Settings& s) {
                return s.worker.metrics_host.empty() ? std::string()
                                                     : s.worker.metrics_host + ":" + std::to_string(s.worker.metrics_port);
              }),
      Key("webrtc.ice_address", "ice-address", "the one local address WebRTC ICE uses (UDP; loopback by default)", F(server.webrtc.ice_address)),
      Key("webrtc.publish_token", "publish-token", "bearer token WHIP publishers send (empty: server.token)", F(server.webrtc.publish_token)),
      Key("webrtc.view_token", "view-token", "bearer token WHEP viewers send (empty: viewing is public)", F(server.webrtc.view_token)),
      Key("webrtc.allow_origin", "", "CORS Access-Control-Allow-Origin of /whip and /whep", F(server.webrtc.allow_origin)),
      Key("webrtc.max_pending", "", "offers negotiated at once; more are answered 429", F(server.webrtc.max_pending)),
      Key("webrtc.offers_per_s", "", "offers accepted per second (bursts of 2 s worth); more are answered 429", F(server.webrtc.offers_per_s)),
      Key("webrtc.jitter_ms", "", "WebRTC receive jitter buffer, ms: how long a missing packet is waited for, room for NACK retransmissions (under 5% loss at ~80 ms RTT: 120 ms kept 15 fps of 30; 200 ms gave up on 4-5 packets in 15 s, each costing the frames up to a keyframe; 400 ms on none)", F(server.webrtc.jitter_ms)),
      Key("webrtc.start_bitrate_kbps", "", "x-google-start-bitrate in answers (Chromium starts at 320x180 without)", F(server.webrtc.start_bitrate_kbps)),
      Key("webrtc.negotiate_timeout_ms", "", "each negotiation step and ICE gathering, ms", F(server.webrtc.negotiate_timeout_ms)),
      Key("webrtc.connect_timeout_ms", "", "a WHEP viewer not connected this long after its answer is removed, ms", F(server.webrtc.connect_timeout_ms)),
  };
  return keys;
#undef F
}

const KeySpec* FindKey(const std::string& key) {
  for (const auto& k : ConfigKeys())
    if (k.key == key) return &k;
  return nullptr;
}

std::string EnvName(const std::string& key) {
  std::string e = "VEIL_";
  for (char c : key) {
    if (c == '.') e += "__";
    else e += char(std::toupper(static_cast<unsigned char>(c)));
  }
  return e;
}

}  // namespace veil
