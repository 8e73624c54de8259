// veil's one typed configuration: every key has a type, a default, a doc
// line and (optionally) a command-line flag. Values come from, in increasing
// precedence: defaults < TOML file (--config) < environment (VEIL_<SECTION>__<KEY>)
// < command-line flags. A key that is set but not understood is an error
// naming it (the field report's cause 7), and so is a value of the wrong type.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/status.h"
#include "media/media_types.h"
#include "inference/scheduler.h"
#include "inference/target_pool.h"
#include "privacy/privacy_stage.h"
#include "vision/detector.h"

namespace veil {

// WebRTC (WHIP/WHEP) settings of veil serve, validated.
struct WebRtcSettings {
  std::string ice_address = "127.0.0.1";  // the one address ICE gathers on
  std::string publish_token;              // WHIP bearer token (empty: server.token)
  std::string view_token;                 // WHEP bearer token (empty: viewing is public)
  std::string allow_origin = "*";         // CORS Access-Control-Allow-Origin of /whip and /whep
  int max_pending = 4;                    // offers negotiated at once; more are answered 429
  double offers_per_s = 10;               // sustained offers per second (burst: 2 s worth); more -> 429
  int start_bitrate_kbps = 2500;
  int jitter_ms = 400;                    // receive jitter buffer of WebRTC peers: room for NACK retransmissions
  double negotiate_timeout_ms = 5000, connect_timeout_ms = 15000;
};

// The live server's settings, validated.
struct ServerSettings {
  std::string listen_host = "127.0.0.1";
  int listen_port = 8080;
  std::string token;
  std::vector<std::string> allowed_hosts;  // Host names browsers may use besides IP literals and localhost
  std::string rtp_address = "127.0.0.1";
  bool any_viewer_host = false;  // false: viewers must be on loopback
  // Admission: 0 = auto, by measured capacity (server/capacity.h) on `cores` usable cores
  // (0 = detected) of which sessions may take cpu_share; N = at most N sessions, whatever they cost.
  int max_sessions = 0, max_viewers = 16, viewer_queue = 8, jitter_ms = 40;
  double cores = 0, cpu_share = 0.75;
  // Admission by latency as well (max_sessions = auto): no new session while a running one's
  // processing p99 over its last 5 s is above this (0: off). The CPU model cannot see a node
  // whose sessions fit its CPU budget and already miss the frame interval at the p99.
  double admit_p99_ms = 30;
  // Admission (max_sessions = auto) plans each re-encoding session with its encoder at this speed
  // step of its ladder (0: the configured speed; at most the ladder's last step), at the cost its
  // sessions measured there.
  int admit_speed_step = 3;
  // The standalone transcode (the limit, and what the cost model's ratios multiply) is timed again
  // once the node has been idle this long, s (0: only at startup; server/capacity.h, Retime).
  double retime_s = 60;
  // Until the model keeps its full set of timings (CapacityModel::kKeptTimings, startup's among
  // them), an idle node re-times after this long instead, s: a start whose one timing read high
  // is outvoted seconds later, not minutes (0: retime_s throughout).
  double retime_first_s = 5;
  // A file where the node keeps what its cost model learned, read at startup (empty: none;
  // server/capacity_memory.h).
  std::string capacity_state;
  // Bypass sessions forward the publisher's frames instead of re-encoding them (server/live_session.h).
  bool bypass_forward = true;
  // Load shedding (server/speed_control.h): encoder speed, the trimmed detection window,
  // detection cadence, new viewers, the newest session; a level is taken back after shed_calm_s
  // of headroom.
  bool shed = true;
  bool shed_trim = true;  // the trimmed detection window is a level (between encoder speed and cadence)
  double shed_calm_s = 5;
  // A session's first seconds are not judged for shedding (its own start-up is late by itself).
  double shed_warmup_s = 3;
  // A session whose start takes the node's predicted load past its budget at the configured
  // encoder speed starts at the lowest step that fits, up to the plan step (admit_speed_step),
  // as do the sessions still in their warm-up beside it (SessionManager::StartLevel).
  bool shed_start_by_load = true;
  // A window overuses when its p90 frame latency passes shed_high x the frame interval (or too
  // many frames went stale); it is calm under shed_low x the interval with nothing stale, or,
  // while the node's CPU in its last second left room in its budget (the cores x cpu_share) for
  // one more default session, under shed_low_with_room x the interval.
  double shed_high = 0.7, shed_low = 0.4, shed_low_with_room = 0.55;
  // A session takes a level back only while the node's CPU in its last second, plus the levels
  // granted since, plus what this one adds, fits in the budget (the cores x cpu_share;
  // server/speed_control.h, TakeBackBudget). Studied and off by default: no p99 gain measured,
  // poorer steps (docs/capacity.md, "Taking levels back within the node's budget").
  bool shed_take_back_in_budget = false;
  // A window is judged as soon as its frames past the budget already decide an overuse, not
  // only at its end (server/speed_control.h, SpeedControlConfig::judge_early). Studied and off
  // by default: fewer late frames, ranges overlapping (docs/capacity.md, "Windows judged early").
  bool shed_judge_early = false;
  // SIGTERM or POST /v1/drain: no new sessions; running ones go on until their publishers
  // leave or this passes (0: SIGTERM ends them at once).
  double drain_timeout_s = 0;
  // Cluster (src/cluster): empty redis = a standalone node.
  std::string cluster_redis, cluster_node_id, cluster_public_url;
  double publisher_timeout_ms = 5000, start_timeout_ms = 30000, budget_ms = 33;
  // WebRTC ingest: frames handed over bunched (behind a retransmission) keep the deadline of
  // their own RTP spacing, up to this much later than their hand-over; RTP ingest never does.
  double burst_allowance_ms = 100;
  double history_s = 300, history_interval_ms = 1000;  // per-session figures' history (operator page)
  // The control plane's HTTP server (http/server.h): connection cap, handler threads, deadlines.
  int http_max_connections = 4096, http_threads = 8;
  // Sessions' frames run on one pool (server/frame_executor.h), earliest deadline first, of
  // frame_threads threads (0: the usable cores); false: a worker thread per session.
  bool frame_executor = true;
  int frame_threads = 0;
  // Sessions' periodic keyframes (every encoder.keyint frames) spread over the period
  // (server/period_phases.h); false: each encoder's own cadence.
  bool stagger_keyframes = true;
  // Sessions' detections (every privacy.detect_every frames) spread over the detection period
  // (server/period_phases.h); false: wherever each session's first frame put them. Off: it
  // measured no gain (docs/capacity.md "Detections spread over the period").
  bool stagger_detections = false;
  // Each session's decode runs on the frame executor with the rest of its frame's work, earliest
  // deadline first, instead of on its ingest thread (fewer threads contending for the cores). On:
  // 4 and 5 anonymized sessions' p99 3-7 ms lower (docs/capacity.md "The decode on the executor").
  bool decode_on_executor = true;
  // The in-process AI target's detections run on the frame executor too, each batch due as a
  // frame handed over when its oldest request was submitted (+ budget_ms), instead of on an
  // inference thread of their own that the OS time-slices against the frames' threads. Needs
  // frame_executor and at least 2 frame threads (a stalled detector holds one). On: 4 and 5
  // anonymized sessions' p99 3.4 and 7.4 ms lower, at the same CPU (docs/capacity.md
  // "Detections on the executor").
  bool detect_on_executor = true;
  double http_request_timeout_ms = 10000, http_idle_timeout_ms = 30000;
  SchedulerConfig scheduler;     // [inference]: the in-process target's queue, and each remote target's
  bool fault_injection = false;  // enables PUT /v1/debug/inference (tests)
  std::vector<TargetSpec> targets{{"local", ""}};
  std::string remote_model = "yunet_u8";
  int remote_threads = 2;
  double deadline_ms = 500, probe_interval_ms = 200, probe_timeout_ms = 500;
  WebRtcSettings webrtc;
};

// Cross-field rules and the ranges of the server's own keys (declared here once; the stages'
// own structs validate theirs: PrivacyConfig, DetectorConfig, EncoderOptions, SchedulerConfig).
Status Validate(const ServerSettings& s);

// veil worker's settings, validated.
struct WorkerSettings {
  std::string listen = "127.0.0.1:8001";
  std::string metrics_host;  // empty: no metrics endpoint
  int metrics_port = 0;
  SchedulerConfig scheduler;  // [inference]
  bool fault_injection = false;
};
Status Validate(const WorkerSettings& s);

// The whole configuration: each stage's own struct, once. Every key of ConfigKeys() reads and
// writes a field of one of them (text keys such as privacy.detect_size are parsed into the typed
// field when set); a stage's ranges are declared by that stage's Validate(), which Build*() runs.
struct Settings {
  PrivacyConfig privacy;         // [privacy], [mosaic], [tracker]
  DetectorConfig detector;       // [detector]
  EncoderOptions encoder;        // [encoder]
  int decode_threads = 1;        // [decoder]
  SchedulerConfig inference;     // [inference] max_batch, max_wait_us, threads, max_queue: veil serve and veil worker
  bool fault_injection = false;  // [inference]
  ServerSettings server;         // [server], [cluster], [webrtc], the rest of [inference]
  WorkerSettings worker;         // [worker]
};

using Value = std::variant<int64_t, double, bool, std::string>;
enum class Source { kDefault, kFile, kEnv, kFlag };
const char* SourceName(Source s);

struct KeySpec {
  std::string key;   // "section.name"
  std::string flag;  // command-line flag without dashes ("" = none)
  std::string doc;
  Value def;         // default (also gives the type)
  // Stores a value of the key's type in its stage's field (text keys are parsed here: an error
  // names what is wrong). Ranges are the stage's, checked when the stage's settings are built.
  std::function<Status(Settings&, const Value&)> set;
  std::function<Value(const Settings&)> get;
};

// Every key veil understands.
const std::vector<KeySpec>& ConfigKeys();
const KeySpec* FindKey(const std::string& key);
std::string EnvName(const std::string& key);  // privacy.detect_size -> VEIL_PRIVACY__DETECT_SIZE

class Config {
 public:
  Config() = default;
  // Each step validates types and names; later steps override earlier ones.
  Status LoadFile(const std::string& path);
  Status LoadEnv(char** envp);
  Status SetText(const std::string& key, const std::string& text, Source src);  // flags, --set k=v

  const Settings& settings() const { return s_; }
  Source source(const std::string& key) const;
  // "key = value  # source" for every key, in registry order (TOML-compatible).
  std::string Dump() const;
  // "key = value" for every key keep() takes, in registry order (no sources, no docs).
  std::string Values(const std::function<bool(const std::string& key)>& keep) const;

  Result<PrivacyConfig> BuildPrivacy() const;
  Result<DetectorConfig> BuildDetector() const;
  Result<EncoderOptions> BuildEncoder() const;
  Result<ServerSettings> BuildServer() const;
  Result<WorkerSettings> BuildWorker() const;

 private:
  Status Set(const KeySpec& k, const Value& v, Source src);
  Settings s_;
  std::map<std::string, Source> sources_;
};

std::string FormatValue(const Value& v);
// Parses "WxH" (syntax only; ranges are checked where the size is used).
Result<cv::Size> ParseSize(const std::string& s);

}  // namespace veil
