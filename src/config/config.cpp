#include "config/config.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <charconv>
#include <cmath>
#include <cstring>
#include <sstream>

#include <toml.hpp>

namespace veil {
namespace {

template <typename T>
KeySpec Key(std::string key, std::string flag, std::string doc, T Settings::*field) {
  using Stored = std::conditional_t<std::is_same_v<T, int64_t> || std::is_same_v<T, double> ||
                                        std::is_same_v<T, bool>,
                                    T, std::string>;
  const Settings defaults;
  KeySpec k;
  k.key = std::move(key);
  k.flag = std::move(flag);
  k.doc = std::move(doc);
  k.def = Value(Stored(defaults.*field));
  k.set = [field](Settings& s, const Value& v) { s.*field = std::get<Stored>(v); };
  k.get = [field](const Settings& s) { return Value(Stored(s.*field)); };
  return k;
}

// Converts text (env, flags) to the key's type.
Result<Value> ParseText(const KeySpec& k, const std::string& t) {
  auto bad = [&](const char* what) {
    return Status::Error("config key " + k.key + " needs " + what + ", got '" + t + "'");
  };
  switch (k.def.index()) {
    case 0: {
      int64_t v = 0;
      auto r = std::from_chars(t.data(), t.data() + t.size(), v);
      if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size()) return bad("an integer");
      return Value(v);
    }
    case 1: {
      char* end = nullptr;
      const double v = std::strtod(t.c_str(), &end);
      if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v)) return bad("a number");
      return Value(v);
    }
    case 2:
      if (t == "true" || t == "1") return Value(true);
      if (t == "false" || t == "0") return Value(false);
      return bad("true or false");
    default:
      return Value(t);
  }
}

Result<Value> FromToml(const KeySpec& k, const toml::value& v) {
  const auto wrong = [&](const char* what) {
    return Status::Error("config key " + k.key + " needs " + what);
  };
  switch (k.def.index()) {
    case 0:
      if (!v.is_integer()) return wrong("an integer");
      return Value(int64_t(v.as_integer()));
    case 1:
      if (v.is_integer()) return Value(double(v.as_integer()));
      if (!v.is_floating()) return wrong("a number");
      return Value(double(v.as_floating()));
    case 2:
      if (!v.is_boolean()) return wrong("true or false");
      return Value(bool(v.as_boolean()));
    default:
      if (v.is_integer()) return Value(std::to_string(v.as_integer()));  // e.g. detect_every = 3
      if (!v.is_string()) return wrong("a string");
      return Value(std::string(v.as_string().str));
  }
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

const char* SourceName(Source s) {
  switch (s) {
    case Source::kDefault: return "default";
    case Source::kFile: return "file";
    case Source::kEnv: return "env";
    case Source::kFlag: return "flag";
  }
  return "?";
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
  using S = Settings;
  static const std::vector<KeySpec> keys = {
      Key("privacy.mode", "mode", "anonymize | bypass | full_blur", &S::mode),
      Key("privacy.detect_size", "detect-size", "box the detection copy fits in, WxH (aspect kept)", &S::detect_size),
      Key("privacy.detect_every", "detect-every", "detect every N frames, or 'auto' (by detect_budget_ms)", &S::detect_every),
      Key("privacy.detect_budget_ms", "detect-budget", "auto cadence: detection ms per frame to aim for", &S::detect_budget_ms),
      Key("privacy.max_age_ms", "max-age-ms", "older detection result -> whole-frame mosaic (fail-closed)", &S::max_age_ms),
      Key("privacy.scene_cut", "scene-cut", "a scene cut forces detection on that frame", &S::scene_cut),
      Key("privacy.scene_cut_threshold", "", "mean abs luma difference of 32x18 thumbnails that is a cut", &S::scene_cut_threshold),
      Key("mosaic.cell", "cell", "'auto' (adapts to the face) or a fixed cell size in px", &S::cell),
      Key("mosaic.cells_across", "cells-across", "adaptive mosaic: cells across a face", &S::cells_across),
      Key("mosaic.min_cell", "min-cell", "adaptive mosaic: smallest cell, px", &S::min_cell),
      Key("mosaic.full_cell", "full-cell", "cell of whole-frame mosaic (full_blur, fail-closed), px", &S::full_cell),
      Key("mosaic.margin", "margin", "grow each face box by this fraction per side", &S::margin),
      Key("mosaic.margin_min", "margin-min", "...and by at least this many pixels of the detection copy per side", &S::margin_min),
      Key("tracker.score", "score", "detection score that starts a track", &S::score),
      Key("tracker.low_score", "low-score", "lowest detection score kept (matched to tracks, masked)", &S::low_score),
      Key("tracker.max_coast", "max-coast", "frames a track survives without a detection", &S::max_coast),
      Key("tracker.growth_base", "", "a mask grows by this fraction of the face per side", &S::growth_base),
      Key("tracker.growth_per_frame", "", "...plus this fraction per frame since the face's last detection", &S::growth_per_frame),
      Key("detector.family", "detector", "yunet | ultraface", &S::detector),
      Key("detector.model", "model", "model file (default: $VEIL_MODEL_DIR, data dir, assets, embedded)", &S::model),
      Key("detector.model_sha256", "model-sha256", "accept a model file with this sha256 (custom models)", &S::model_sha256),
      Key("detector.threads", "threads", "OpenCV threads inside one detector", &S::threads),
      Key("detector.nms_iou", "", "non-maximum suppression IoU", &S::nms_iou),
      Key("encoder.codec", "codec", "vp8 | h264 | rawvideo (empty: from the output extension)", &S::codec),
      Key("encoder.bitrate_kbps", "bitrate", "video bitrate, kbps (0: by resolution)", &S::bitrate_kbps),
      Key("encoder.threads", "encode-threads", "encoder threads", &S::encode_threads),
      Key("encoder.keyint", "keyint", "a keyframe at least every N frames", &S::keyint),
      Key("encoder.vp8_speed", "vp8-speed", "libvpx cpu-used: -16..-1 fixed speed, 1..16 adaptive", &S::vp8_speed),
      Key("decoder.threads", "decode-threads", "decoder threads", &S::decode_threads),
      Key("server.listen", "listen", "control API address HOST:PORT (non-loopback needs server.token)", &S::listen),
      Key("server.token", "token", "bearer token the control API requires (empty: none, loopback only)", &S::token),
      Key("server.allowed_hosts", "allowed-hosts", "host names the API and pages answer to besides IP literals and localhost, comma-separated (DNS rebinding guard)", &S::allowed_hosts),
      Key("server.rtp_address", "rtp-address", "address RTP ingest binds and the SDPs advertise", &S::rtp_address),
      Key("server.viewer_hosts", "viewer-hosts", "where viewers may receive RTP: loopback or any", &S::viewer_hosts),
      Key("server.max_sessions", "max-sessions", "'auto' (as many as the measured capacity carries) or a fixed number of concurrent sessions; one more is refused with 503", &S::max_sessions),
      Key("server.cores", "cores", "cores the capacity model counts on (0: the process's CPU affinity and cgroup quota)", &S::cores),
      Key("server.cpu_share", "cpu-share", "share of those cores sessions may take before new ones are refused (max_sessions = auto)", &S::cpu_share),
      Key("server.drain_timeout_s", "drain-timeout-s", "SIGTERM or POST /v1/drain: running sessions may go on this long, s (0: SIGTERM ends them at once)", &S::drain_timeout_s),
      Key("server.bypass_forward", "", "bypass forwards the publisher's frames (a decode, no re-encode); false: re-encode them", &S::bypass_forward),
      Key("server.shed", "shed", "under overload shed in order: encoder speed, detection cadence (inside the privacy bound), new viewers, then the newest session; false: never", &S::shed),
      Key("server.shed_calm_s", "", "seconds of headroom before a shed level is taken back (doubles when taking one back overloads again)", &S::shed_calm_s),
      Key("server.shed_high", "", "a window overuses (one shed level more) when its p90 frame latency, decoded to encoded, passes this share of the frame interval, or when over 5% of its frames went stale", &S::shed_high),
      Key("server.shed_low", "", "a window is calm when its p90 frame latency is under this share of the frame interval and no frame went stale", &S::shed_low),
      Key("server.max_viewers", "max-viewers", "viewers per session", &S::max_viewers),
      Key("server.viewer_queue", "viewer-queue", "frames queued per viewer before it drops to a keyframe", &S::viewer_queue),
      Key("server.jitter_ms", "jitter-ms", "ingest jitter buffer depth, ms", &S::jitter_ms),
      Key("server.budget_ms", "budget-ms", "a frame this old after decoding is dropped as stale, ms", &S::budget_ms),
      Key("server.publisher_timeout_ms", "publisher-timeout-ms", "no packet for this long ends a session, ms", &S::publisher_timeout_ms),
      Key("server.start_timeout_ms", "start-timeout-ms", "a session with no packet this long after creation ends, ms", &S::start_timeout_ms),
      Key("server.history_s", "history-s", "per-session history of the figures kept for the operator page, s", &S::history_s),
      Key("server.history_interval_ms", "history-interval-ms", "one history point per this interval, ms (at least the 250-ms housekeeping tick)", &S::history_interval_ms),
      Key("server.http_max_connections", "http-max-connections", "control API connections open at once; more are closed on arrival", &S::http_max_connections),
      Key("server.http_threads", "http-threads", "control API handler threads (/healthz is answered apart from them)", &S::http_threads),
      Key("server.frame_executor", "frame-executor", "sessions' frames (privacy stage and encode) run on one pool of threads, earliest deadline first; false: a worker thread per session", &S::frame_executor),
      Key("server.stagger_keyframes", "stagger-keyframes", "sessions' periodic keyframes (every encoder.keyint frames) are spread over the period, not on the same frame; false: each encoder's own cadence", &S::stagger_keyframes),
      Key("server.frame_threads", "frame-threads", "the frame executor's threads; 0: the usable cores (cgroup quota or affinity, rounded up)", &S::frame_threads),
      Key("server.http_request_timeout_ms", "http-request-timeout-ms", "a request's head, its body, and its answer must each go through within this, ms", &S::http_request_timeout_ms),
      Key("server.http_idle_timeout_ms", "http-idle-timeout-ms", "a kept-alive connection with no new request this long is closed, ms", &S::http_idle_timeout_ms),
      Key("inference.max_batch", "max-batch", "frames per forward pass, across sessions", &S::max_batch),
      Key("inference.max_wait_us", "max-wait-us", "how long a partial batch waits for more frames, us", &S::max_wait_us),
      Key("inference.threads", "infer-threads", "inference threads (one detector each)", &S::infer_threads),
      Key("inference.max_queue", "infer-queue", "pending detection requests across sessions", &S::infer_queue),
      Key("inference.fault_injection", "", "allow PUT /v1/debug/inference to stall or fail detection (tests only)", &S::fault_injection),
      Key("inference.targets", "targets", "AI targets, comma-separated: local and/or HOST:PORT of KServe v2 gRPC workers", &S::targets),
      Key("inference.remote_model", "remote-model", "model name at remote targets: yunet_u8 (UINT8 NHWC) or yunet (FP32 NCHW, Triton)", &S::remote_model),
      Key("inference.remote_threads", "remote-threads", "detection calls in flight per remote target", &S::remote_threads),
      Key("inference.deadline_ms", "deadline-ms", "remote detection call deadline; a later answer marks the target down, ms", &S::deadline_ms),
      Key("inference.probe_interval_ms", "probe-interval-ms", "AI target health probe interval, ms", &S::probe_interval_ms),
      Key("inference.probe_timeout_ms", "probe-timeout-ms", "a probe unanswered this long marks the target down, ms", &S::probe_timeout_ms),
      Key("cluster.redis", "redis", "redis://HOST:PORT[/DB] of the node registry (empty: a standalone node)", &S::cluster_redis),
      Key("cluster.node_id", "node-id", "this node's id in the registry (empty: HOSTNAME-PORT)", &S::cluster_node_id),
      Key("cluster.public_url", "public-url", "the URL clients reach this node's API, WHIP and WHEP at (empty: http://LISTEN)", &S::cluster_public_url),
      Key("worker.listen", "listen", "veil worker: gRPC address HOST:PORT (the protocol has no authentication)", &S::worker_listen),
      Key("worker.metrics_listen", "metrics-listen", "veil worker: HTTP address for /metrics and /healthz (empty: none)", &S::worker_metrics),
      Key("webrtc.ice_address", "ice-address", "the one local address WebRTC ICE uses (UDP; loopback by default)", &S::ice_address),
      Key("webrtc.publish_token", "publish-token", "bearer token WHIP publishers send (empty: server.token)", &S::publish_token),
      Key("webrtc.view_token", "view-token", "bearer token WHEP viewers send (empty: viewing is public)", &S::view_token),
      Key("webrtc.allow_origin", "", "CORS Access-Control-Allow-Origin of /whip and /whep", &S::allow_origin),
      Key("webrtc.max_pending", "", "offers negotiated at once; more are answered 429", &S::max_pending),
      Key("webrtc.offers_per_s", "", "offers accepted per second (bursts of 2 s worth); more are answered 429", &S::offers_per_s),
      Key("webrtc.jitter_ms", "", "WebRTC receive jitter buffer, ms: room for NACK retransmissions (120 ms kept 15 fps of 30 under 5% loss at ~80 ms RTT, 200 ms 25-30)", &S::webrtc_jitter_ms),
      Key("webrtc.start_bitrate_kbps", "", "x-google-start-bitrate in answers (Chromium starts at 320x180 without)", &S::start_bitrate_kbps),
      Key("webrtc.negotiate_timeout_ms", "", "each negotiation step and ICE gathering, ms", &S::negotiate_timeout_ms),
      Key("webrtc.connect_timeout_ms", "", "a WHEP viewer not connected this long after its answer is removed, ms", &S::connect_timeout_ms),
  };
  return keys;
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

Source Config::source(const std::string& key) const {
  auto it = sources_.find(key);
  return it == sources_.end() ? Source::kDefault : it->second;
}

Status Config::Set(const KeySpec& k, const Value& v, Source src) {
  k.set(s_, v);
  sources_[k.key] = src;
  return Status::Ok();
}

Status Config::SetText(const std::string& key, const std::string& text, Source src) {
  const KeySpec* k = FindKey(key);
  if (!k) return Status::Error("unknown config key '" + key + "'");
  auto v = ParseText(*k, text);
  if (!v) return v.status();
  return Set(*k, *v, src);
}

namespace {
// TOML files are UTF-8 text (TOML 1.0). Checked before the parser sees them: Debian's toml11
// reads past its buffer on invalid UTF-8 inside an unterminated literal string (found by
// fuzz_config). Also bounds the size: a configuration is a few kilobytes.
Status CheckTomlText(const std::string& t, const std::string& path) {
  if (t.size() > (1 << 20)) return Status::Error("config " + path + " is larger than 1 MiB");
  for (size_t i = 0; i < t.size();) {
    const auto c = static_cast<unsigned char>(t[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = n > 0 && i + n <= t.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(t[i + k]) & 0xc0) == 0x80;
    if (ok && n == 1) ok = c >= 0x20 || c == '\t' || c == '\n' || c == '\r';
    if (!ok || c == 0x7f)
      return Status::Error("config " + path + ": not TOML text (invalid UTF-8 or a control character at byte " +
                           std::to_string(i) + ")");
    i += n;
  }
  return Status::Ok();
}
}  // namespace

Status Config::LoadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Error("cannot read config " + path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (Status s = CheckTomlText(text, path); !s) return s;
  toml::value root;
  try {
    std::istringstream ss(text);
    root = toml::parse(ss, path);
  } catch (const std::exception& e) {
    return Status::Error("cannot read config " + path + ": " + e.what());
  }
  if (!root.is_table()) return Status::Error("config " + path + ": not a TOML table");
  for (const auto& [section, table] : root.as_table()) {
    if (!table.is_table()) return Status::Error("config " + path + ": unknown key '" + section + "' (keys live in sections)");
    for (const auto& [name, value] : table.as_table()) {
      const std::string key = section + "." + name;
      const KeySpec* k = FindKey(key);
      if (!k) return Status::Error("config " + path + ": unknown key '" + key + "'");
      auto v = FromToml(*k, value);
      if (!v) return Status::Error("config " + path + ": " + v.error());
      Set(*k, *v, Source::kFile);
    }
  }
  return Status::Ok();
}

Status Config::LoadEnv(char** envp) {
  for (char** e = envp; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;
    const std::string name(*e, eq - *e);
    // Only VEIL_<SECTION>__<KEY> names are config; VEIL_ASSETS, VEIL_MODEL_DIR are paths.
    if (name.rfind("VEIL_", 0) != 0 || name.find("__") == std::string::npos) continue;
    const KeySpec* match = nullptr;
    for (const auto& k : ConfigKeys())
      if (EnvName(k.key) == name) match = &k;
    if (!match) return Status::Error("unknown config variable " + name + " in the environment");
    if (Status s = SetText(match->key, eq + 1, Source::kEnv); !s)
      return Status::Error(name + ": " + s.message());
  }
  return Status::Ok();
}

std::string Config::Dump() const {
  std::string out, section;
  for (const auto& k : ConfigKeys()) {
    const std::string sec = k.key.substr(0, k.key.find('.'));
    if (sec != section) {
      out += (out.empty() ? "[" : "\n[") + sec + "]\n";
      section = sec;
    }
    out += k.key.substr(sec.size() + 1) + " = " + FormatValue(k.get(s_)) + "  # " + SourceName(source(k.key)) +
           ": " + k.doc + "\n";
  }
  return out;
}

Result<PrivacyConfig> Config::BuildPrivacy() const {
  const Settings& s = s_;
  PrivacyConfig c;
  auto m = ParseMode(s.mode);
  if (!m) return m.status();
  c.mode = *m;
  auto box = ParseSize(s.detect_size);
  if (!box) return Status::Error("privacy.detect_size: " + box.error());
  c.detect_box = *box;
  if (s.detect_every == "auto") {
    c.detect_every = 0;
  } else {
    int n = 0;
    auto r = std::from_chars(s.detect_every.data(), s.detect_every.data() + s.detect_every.size(), n);
    if (r.ec != std::errc() || r.ptr != s.detect_every.data() + s.detect_every.size() || n < 1 || n > 120)
      return Status::Error("detect-every must be 'auto' or an integer in [1, 120], got '" + s.detect_every + "'");
    c.detect_every = n;
  }
  if (s.cell != "auto") {
    int n = 0;
    auto r = std::from_chars(s.cell.data(), s.cell.data() + s.cell.size(), n);
    if (r.ec != std::errc() || r.ptr != s.cell.data() + s.cell.size())
      return Status::Error("mosaic cell must be 'auto' or a pixel count, got '" + s.cell + "'");
    if (n == 0) return Status::Error("mosaic cell 0 is degenerate: use 'auto' or a pixel count >= 4");
    c.mosaic.fixed_cell = n;
  }
  auto narrow = [](int64_t v) { return int(std::clamp<int64_t>(v, -1000000, 1000000)); };
  c.mosaic.cells_across = s.cells_across;
  c.mosaic.min_cell = narrow(s.min_cell);
  c.mosaic.full_frame_cell = narrow(s.full_cell);
  c.mosaic.margin = s.margin;
  c.mosaic.margin_min = s.margin_min;
  c.tracker.high_score = float(s.score);
  c.tracker.low_score = float(s.low_score);
  c.tracker.max_coast_frames = narrow(s.max_coast);
  c.tracker.growth_base = float(s.growth_base);
  c.tracker.growth_per_frame = float(s.growth_per_frame);
  c.tracker.tentative_frames = std::min(c.tracker.tentative_frames, c.tracker.max_coast_frames);
  c.max_result_age_ms = s.max_age_ms;
  c.detect_budget_ms = s.detect_budget_ms;
  c.scene_cut = s.scene_cut;
  c.scene_cut_threshold = s.scene_cut_threshold;
  if (Status st = Validate(c); !st) return st;
  return c;
}

Result<DetectorConfig> Config::BuildDetector() const {
  DetectorConfig d;
  d.family = s_.detector;
  d.model_path = s_.model;
  d.model_sha256 = s_.model_sha256;
  d.threads = int(std::clamp<int64_t>(s_.threads, -1, 100000));
  d.nms_iou = float(s_.nms_iou);
  if (Status st = Validate(d); !st) return st;
  return d;
}

Result<EncoderOptions> Config::BuildEncoder() const {
  EncoderOptions e;
  if (!s_.codec.empty() && s_.codec != "vp8" && s_.codec != "h264" && s_.codec != "rawvideo")
    return Status::Error("encoder codec must be vp8, h264 or rawvideo, got '" + s_.codec + "'");
  auto in = [](int64_t v, int64_t lo, int64_t hi, const char* what) {
    return (v < lo || v > hi) ? Status::Error(std::string(what) + " must be in [" + std::to_string(lo) + ", " +
                                              std::to_string(hi) + "], got " + std::to_string(v))
                              : Status::Ok();
  };
  for (Status s : {in(s_.bitrate_kbps, 0, 200000, "encoder.bitrate_kbps"), in(s_.encode_threads, 1, 64, "encoder.threads"),
                   in(s_.keyint, 1, 10000, "encoder.keyint"), in(s_.vp8_speed, -16, 16, "encoder.vp8_speed"),
                   in(s_.decode_threads, 1, 64, "decoder.threads")})
    if (!s) return s;
  e.codec = s_.codec;
  e.bitrate_kbps = int(s_.bitrate_kbps);
  e.threads = int(s_.encode_threads);
  e.keyint_frames = int(s_.keyint);
  e.vp8_speed = int(s_.vp8_speed);
  return e;
}

namespace {
Status InRange(int64_t x, int64_t lo, int64_t hi, const char* what) {
  return (x < lo || x > hi) ? Status::Error(std::string(what) + " must be in [" + std::to_string(lo) + ", " +
                                            std::to_string(hi) + "], got " + std::to_string(x))
                            : Status::Ok();
}
}  // namespace

Result<ServerSettings> Config::BuildServer() const {
  const Settings& s = s_;
  ServerSettings v;
  const auto colon = s.listen.rfind(':');
  if (colon == std::string::npos || colon == 0) return Status::Error("server.listen must be HOST:PORT, got '" + s.listen + "'");
  v.listen_host = s.listen.substr(0, colon);
  int port = -1;
  const char* b = s.listen.data() + colon + 1;
  const char* e = s.listen.data() + s.listen.size();
  auto r = std::from_chars(b, e, port);
  if (r.ec != std::errc() || r.ptr != e || port < 0 || port > 65535)
    return Status::Error("server.listen port must be in [0, 65535], got '" + s.listen + "'");
  v.listen_port = port;
  const bool loopback = v.listen_host.rfind("127.", 0) == 0 || v.listen_host == "localhost" || v.listen_host == "::1";
  if (!loopback && s.token.empty())
    return Status::Error("server.listen " + s.listen + " is not loopback: set server.token (bearer token) first");
  if (!s.token.empty() && s.token.size() < 16)
    return Status::Error("server.token must be at least 16 characters");
  for (char c : s.token)
    if (c <= ' ' || c > '~') return Status::Error("server.token must be printable ASCII without spaces");
  v.token = s.token;
  v.rtp_address = s.rtp_address;
  if (s.viewer_hosts != "loopback" && s.viewer_hosts != "any")
    return Status::Error("server.viewer_hosts must be loopback or any, got '" + s.viewer_hosts + "'");
  v.any_viewer_host = s.viewer_hosts == "any";
  const auto in = InRange;
  auto inf = [](double x, double lo, double hi, const char* what) {
    return (!(x >= lo && x <= hi)) ? Status::Error(std::string(what) + " must be in [" + FormatValue(lo) + ", " +
                                                   FormatValue(hi) + "], got " + FormatValue(x))
                                   : Status::Ok();
  };
  if (s.max_sessions == "auto") {
    v.max_sessions = 0;
  } else {
    int n = 0;
    auto r = std::from_chars(s.max_sessions.data(), s.max_sessions.data() + s.max_sessions.size(), n);
    if (s.max_sessions.empty() || r.ec != std::errc() || r.ptr != s.max_sessions.data() + s.max_sessions.size() || n < 1 ||
        n > 1024)
      return Status::Error("server.max_sessions must be 'auto' or in [1, 1024], got '" + s.max_sessions + "'");
    v.max_sessions = n;
  }
  for (Status st : {inf(s.cores, 0, 4096, "server.cores"), inf(s.cpu_share, 0.05, 1, "server.cpu_share"),
                    inf(s.drain_timeout_s, 0, 86400, "server.drain_timeout_s"),
                    in(s.max_viewers, 1, 1024, "server.max_viewers"),
                    in(s.viewer_queue, 1, 256, "server.viewer_queue"), in(s.jitter_ms, 0, 2000, "server.jitter_ms"),
                    inf(s.budget_ms, 1, 10000, "server.budget_ms"),
                    inf(s.publisher_timeout_ms, 100, 3600000, "server.publisher_timeout_ms"),
                    inf(s.start_timeout_ms, 100, 3600000, "server.start_timeout_ms"),
                    inf(s.history_s, 1, 86400, "server.history_s"),
                    inf(s.history_interval_ms, 250, 60000, "server.history_interval_ms"),
                    in(s.http_max_connections, 16, 1000000, "server.http_max_connections"),
                    in(s.http_threads, 1, 256, "server.http_threads"),
                    in(s.frame_threads, 0, 1024, "server.frame_threads"),
                    inf(s.http_request_timeout_ms, 100, 600000, "server.http_request_timeout_ms"),
                    inf(s.http_idle_timeout_ms, 100, 3600000, "server.http_idle_timeout_ms"),
                    in(s.max_batch, 1, 64, "inference.max_batch"), in(s.max_wait_us, 0, 1000000, "inference.max_wait_us"),
                    in(s.infer_threads, 1, 64, "inference.threads"), in(s.infer_queue, 1, 4096, "inference.max_queue"),
                    in(s.remote_threads, 1, 64, "inference.remote_threads"),
                    inf(s.deadline_ms, 10, 60000, "inference.deadline_ms"),
                    inf(s.probe_interval_ms, 10, 60000, "inference.probe_interval_ms"),
                    inf(s.probe_timeout_ms, 10, 60000, "inference.probe_timeout_ms")})
    if (!st) return st;
  auto targets = ParseTargets(s.targets);
  if (!targets) return targets.status();
  if (s.remote_model.empty()) return Status::Error("inference.remote_model must not be empty");
  v.targets = *targets;
  v.remote_model = s.remote_model;
  v.remote_threads = int(s.remote_threads);
  v.deadline_ms = s.deadline_ms;
  v.probe_interval_ms = s.probe_interval_ms;
  v.probe_timeout_ms = s.probe_timeout_ms;
  v.cores = s.cores;
  v.cpu_share = s.cpu_share;
  v.bypass_forward = s.bypass_forward;
  if (!(s.shed_calm_s >= 1 && s.shed_calm_s <= 600)) return Status::Error("server.shed_calm_s must be in [1, 600]");
  v.shed = s.shed;
  v.shed_calm_s = s.shed_calm_s;
  if (!(s.shed_low > 0 && s.shed_low < s.shed_high && s.shed_high <= 5))
    return Status::Error("server.shed_low and server.shed_high need 0 < shed_low < shed_high <= 5");
  v.shed_high = s.shed_high;
  v.shed_low = s.shed_low;
  v.drain_timeout_s = s.drain_timeout_s;
  if (!s.cluster_redis.empty() && s.cluster_redis.rfind("redis://", 0) != 0)
    return Status::Error("cluster.redis must be redis://HOST:PORT[/DB], got '" + s.cluster_redis + "'");
  for (char c : s.cluster_node_id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      return Status::Error("cluster.node_id must be letters, digits, - _ . only, got '" + s.cluster_node_id + "'");
  if (!s.cluster_public_url.empty() && s.cluster_public_url.rfind("http://", 0) != 0 &&
      s.cluster_public_url.rfind("https://", 0) != 0)
    return Status::Error("cluster.public_url must start with http:// or https://, got '" + s.cluster_public_url + "'");
  v.cluster_redis = s.cluster_redis;
  v.cluster_node_id = s.cluster_node_id;
  v.cluster_public_url = s.cluster_public_url;
  while (!v.cluster_public_url.empty() && v.cluster_public_url.back() == '/') v.cluster_public_url.pop_back();
  v.max_viewers = int(s.max_viewers);
  v.viewer_queue = int(s.viewer_queue);
  v.jitter_ms = int(s.jitter_ms);
  v.budget_ms = s.budget_ms;
  v.publisher_timeout_ms = s.publisher_timeout_ms;
  v.start_timeout_ms = s.start_timeout_ms;
  if (s.history_s * 1000 / s.history_interval_ms > 100000 || s.history_s * 1000 < s.history_interval_ms)
    return Status::Error("server.history_s / server.history_interval_ms must keep 1..100000 points per session");
  for (size_t pos = 0; pos < s.allowed_hosts.size();) {
    size_t end = s.allowed_hosts.find(',', pos);
    if (end == std::string::npos) end = s.allowed_hosts.size();
    std::string name = s.allowed_hosts.substr(pos, end - pos);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    pos = end + 1;
    if (name.empty()) continue;
    for (char& c : name) {
      c = char(std::tolower(static_cast<unsigned char>(c)));
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.')
        return Status::Error("server.allowed_hosts: '" + name + "' is not a host name (letters, digits, - and . only)");
    }
    v.allowed_hosts.push_back(name);
  }
  v.history_s = s.history_s;
  v.http_max_connections = int(s.http_max_connections);
  v.http_threads = int(s.http_threads);
  v.frame_executor = s.frame_executor;
  v.stagger_keyframes = s.stagger_keyframes;
  v.frame_threads = int(s.frame_threads);
  v.http_request_timeout_ms = s.http_request_timeout_ms;
  v.http_idle_timeout_ms = s.http_idle_timeout_ms;
  v.history_interval_ms = s.history_interval_ms;
  v.max_batch = int(s.max_batch);
  v.max_wait_us = int(s.max_wait_us);
  v.infer_threads = int(s.infer_threads);
  v.infer_queue = int(s.infer_queue);
  v.fault_injection = s.fault_injection;
  WebRtcSettings& w = v.webrtc;
  for (const auto& [key, tok] : {std::pair<const char*, const std::string*>{"webrtc.publish_token", &s.publish_token},
                                 {"webrtc.view_token", &s.view_token}}) {
    if (!tok->empty() && tok->size() < 16) return Status::Error(std::string(key) + " must be at least 16 characters");
    for (char c : *tok)
      if (c <= ' ' || c > '~') return Status::Error(std::string(key) + " must be printable ASCII without spaces");
  }
  if (s.allow_origin.empty() || s.allow_origin.find_first_of("\r\n") != std::string::npos)
    return Status::Error("webrtc.allow_origin must be '*' or an origin such as https://example.com");
  for (Status st : {in(s.max_pending, 1, 256, "webrtc.max_pending"), inf(s.offers_per_s, 0.1, 10000, "webrtc.offers_per_s"),
                    in(s.start_bitrate_kbps, 0, 50000, "webrtc.start_bitrate_kbps"),
                    in(s.webrtc_jitter_ms, 0, 2000, "webrtc.jitter_ms"),
                    inf(s.negotiate_timeout_ms, 100, 60000, "webrtc.negotiate_timeout_ms"),
                    inf(s.connect_timeout_ms, 1000, 600000, "webrtc.connect_timeout_ms")})
    if (!st) return st;
  in_addr ia{};
  if (inet_pton(AF_INET, s.ice_address.c_str(), &ia) != 1)
    return Status::Error("webrtc.ice_address must be a numeric IPv4 address, got '" + s.ice_address + "'");
  w.ice_address = s.ice_address;
  w.publish_token = s.publish_token.empty() ? s.token : s.publish_token;
  w.view_token = s.view_token;
  w.allow_origin = s.allow_origin;
  w.max_pending = int(s.max_pending);
  w.offers_per_s = s.offers_per_s;
  w.start_bitrate_kbps = int(s.start_bitrate_kbps);
  w.jitter_ms = int(s.webrtc_jitter_ms);
  w.negotiate_timeout_ms = s.negotiate_timeout_ms;
  w.connect_timeout_ms = s.connect_timeout_ms;
  return v;
}

Result<WorkerSettings> Config::BuildWorker() const {
  const Settings& s = s_;
  WorkerSettings w;
  const size_t colon = s.worker_listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.worker_listen.size())
    return Status::Error("worker.listen must be HOST:PORT, got '" + s.worker_listen + "'");
  const std::string port = s.worker_listen.substr(colon + 1);
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 || std::stoi(port) > 65535)
    return Status::Error("worker.listen port must be in [0, 65535], got '" + s.worker_listen + "'");
  w.listen = s.worker_listen;
  if (!s.worker_metrics.empty()) {
    const size_t c = s.worker_metrics.rfind(':');
    const std::string mp = c == std::string::npos ? "" : s.worker_metrics.substr(c + 1);
    if (c == std::string::npos || c == 0 || mp.empty() || mp.size() > 5 ||
        mp.find_first_not_of("0123456789") != std::string::npos || std::stoi(mp) > 65535)
      return Status::Error("worker.metrics_listen must be HOST:PORT, got '" + s.worker_metrics + "'");
    w.metrics_host = s.worker_metrics.substr(0, c);
    w.metrics_port = std::stoi(mp);
  }
  const auto in = InRange;
  for (Status st : {in(s.max_batch, 1, 64, "inference.max_batch"), in(s.max_wait_us, 0, 1000000, "inference.max_wait_us"),
                    in(s.infer_threads, 1, 64, "inference.threads"), in(s.infer_queue, 1, 4096, "inference.max_queue")})
    if (!st) return st;
  w.max_batch = int(s.max_batch);
  w.max_wait_us = int(s.max_wait_us);
  w.threads = int(s.infer_threads);
  w.max_queue = int(s.infer_queue);
  w.fault_injection = s.fault_injection;
  return w;
}

}  // namespace veil
