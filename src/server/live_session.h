// One live session: RTP or WebRTC (WHIP) in -> decode -> privacy stage (asynchronous detection
// through the AI router: the session's target's scheduler) -> encode -> per-viewer queues -> RTP out.
// Opus audio (a second RTP port, or the WHIP publisher's audio track) is
// relayed to the viewers byte-for-byte. Viewers are plain RTP destinations
// or WebRTC (WHEP) connections; both get the same encoded packets.
// Threads: with the server's frame executor (server/frame_executor.h: earliest
// deadline first across sessions, one thread at a time per session) and
// decode_on_executor, the receiver's streaming thread hands each compressed frame
// over (bounded: 2 s, then dropped to the next keyframe) and the executor decodes
// every frame (inter frames depend on it), queues the picture on a bounded
// latest-frame-wins queue and runs the worker's part. Otherwise the streaming
// thread decodes and hands the picture over that queue to the session's worker:
// the executor, or a thread of the session's own when started without one. The
// worker drops a frame that is already older than the budget (stale drop,
// counted) before any expensive work, then pixelates,
// encodes and hands it to the egress. Nothing waits on inference, and a slow
// viewer only drops its own frames. In bypass the decoding thread forwards the
// publisher's own compressed frames instead (live_session_forward.cpp): no
// queue, no encode, one outgoing RTP stream across mode switches.
// Other threads (the HTTP API) change the mode by posting a command to the worker
// (SetMode, core/command_queue.h), applied between two of its frames.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/command_queue.h"
#include "core/latest_queue.h"
#include "core/metrics.h"
#include "core/mutex.h"
#include "media/codec.h"
#include "privacy/privacy_stage.h"
#include "server/frame_executor.h"
#include "server/session_history.h"
#include "server/snapshot.h"
#include "server/speed_control.h"
#include "transport/rtp/rtp_receiver.h"
#include "transport/rtp/rtp_sender.h"
#include "transport/rtp/udp_relay.h"
#include "transport/webrtc/whep_viewer.h"
#include "transport/webrtc/whip_ingest.h"

namespace veil {

// How a session's media comes in, and how a viewer gets it.
enum class IngestKind { kRtp, kWebRtc };  // a UDP port for plain RTP | a WHIP publisher attaches
enum class ViewerKind { kRtp, kWebRtc };  // plain RTP to host:port | a WHEP peer
inline const char* Name(IngestKind k) { return k == IngestKind::kWebRtc ? "webrtc" : "rtp"; }
inline const char* Name(ViewerKind k) { return k == ViewerKind::kWebRtc ? "webrtc" : "rtp"; }

struct LiveSessionConfig {
  VideoCodec codec = VideoCodec::kVp8;  // ingest and egress codec
  IngestKind ingest = IngestKind::kRtp;
  PrivacyConfig privacy;
  EncoderOptions encoder;
  int decode_threads = 1;
  double budget_ms = 33.0;       // a frame older than this after decoding (or its hand-over) is dropped as stale
  // A frame that arrives bunched with the ones before it (a retransmission held the frames
  // after a lost packet) is due budget_ms after the time its RTP spacing from the frame before
  // gives, at most this much after its own hand-over. 0: due budget_ms after hand-over. The
  // encoder speed control still sees each frame's wait since its hand-over. The server sets
  // server.burst_allowance_ms for WebRTC ingest only.
  double burst_allowance_ms = 0.0;
  size_t queue_frames = 2;       // decoded frames waiting for the worker
  // With an executor: the ingest thread only hands each compressed frame over, and the decode
  // runs on the executor as part of the session's work, earliest deadline first with the rest
  // (server.decode_on_executor). false: the ingest thread decodes.
  bool decode_on_executor = true;
  int jitter_ms = 40;
  std::string ingest_address = "127.0.0.1";
  size_t viewer_queue_frames = 8;
  // Bypass forwards the publisher's compressed frames (re-packetized: one SSRC, sequence and
  // timestamp line for the viewers) instead of re-encoding the decoded picture. false: re-encode.
  bool bypass_forward = true;
  bool audio = true;             // open an Opus RTP port relayed to viewers
  SpeedControlConfig speed;      // load shedding: encoder speed, the trimmed detection window, detection cadence
  // The node's budget its take-backs ask first (server.shed_take_back_in_budget; null: none):
  // each asks for kShedLevelCostShare of the session's CPU over its last second.
  std::shared_ptr<TakeBackBudget> take_back_budget;
  bool shed_trim = true;         // false: no trimmed-window level
  size_t history_points = 300;   // the figures' history: points kept ...
  double history_interval_ms = 1000;  // ... one per interval
  // Periodic keyframes placed by the session (server/period_phases.h): one every
  // keyframe_period_ms of frame arrival time, the first at first_keyframe_ms (NowMs() clock);
  // a keyframe forced for another reason (a viewer joined, a mode switch) less than half a
  // period before takes its place. 0: the encoder's own cadence (encoder.keyint_frames).
  double keyframe_period_ms = 0, first_keyframe_ms = 0;
  // Detections placed by the session (server/period_phases.h): on the frames that arrive nearest
  // `detect_phase` (a fraction, [0, 1)) into each detection period (the privacy stage's cadence
  // in frames), counted from detect_epoch_ms (NowMs() clock). Negative: wherever the session's
  // first frame puts them.
  double detect_phase = -1, detect_epoch_ms = 0;
};

// The detection slot (PrivacyStage::set_detect_slot) that puts a session's detections `phase`
// (a fraction) into each period of `cadence` frames at `fps`, counted from `epoch_ms`, for a
// session whose frame `index` arrived at `arrived_ms`.
int64_t DetectSlot(int64_t index, double arrived_ms, int cadence, double fps, double phase, double epoch_ms);

// Whether a frame may leave as the session's previous output instead of a whole-frame mosaic
// (privacy.cut_hold_frames): it fails closed only because its new shot's detection is on its
// way (FrameReport::awaiting_shot); the previous output exists, has its size and was made in
// anonymize or full_blur (never a bypass frame: its faces were not pixelated); and fewer than
// max_hold frames in a row were held already.
bool MayHoldPrevious(const FrameReport& rep, const Frame* previous, Mode previous_mode, const Frame& f,
                     int held_in_a_row, int max_hold);

// When a frame handed over at `handed_ms` with RTP timestamp `ts` (90 kHz) would have come had
// it kept its spacing from the frame before (handed, or paced, at `prev_paced_ms` with `prev_ts`):
// the later of its hand-over and prev_paced_ms + the timestamp step, at most `allowance_ms`
// after its hand-over. A frame that comes on time or late is paced at its hand-over; only the
// frames of a bunch get later ones. A timestamp step back, or one over the allowance (a
// restart, a pause), counts as no spacing / the allowance.
double PacedHandOver(double handed_ms, uint32_t ts, double prev_paced_ms, uint32_t prev_ts, double allowance_ms);

// A still of the session's outgoing picture (GET /v1/sessions/{id}/snapshot.jpg).
struct SessionSnapshot {
  JpegImage image;
  uint64_t frame = 0;        // the frame's number in the session's output (1 = the first)
  Mode mode = Mode::kAnonymize;  // the privacy mode it was processed in
  bool fail_closed = false;  // a whole-frame mosaic for lack of a fresh detection
  double age_ms = 0;         // since it left the privacy stage
};

struct StageSummary {
  uint64_t count = 0;
  double mean_ms = 0, p50_ms = 0, p99_ms = 0;
};

struct LiveSessionStats {
  uint64_t frames_in = 0, frames_out = 0, stale_drops = 0, decode_errors = 0, viewers = 0, viewer_drops = 0;
  double recent_p99_ms = -1;  // processing p99 over the last 5 s (Tick(); -1: not yet 5 s or under 60 frames)
  uint64_t fast_cut_frames = 0;  // new pictures encoded at the fastest speed (encoder.fast_cuts)
  uint64_t held_frames = 0;  // sent as the previous output at a cut (privacy.cut_hold_frames)
  int width = 0, height = 0;         // of the last frame sent (0: none yet)
  uint64_t resolution_changes = 0;   // the outgoing picture changed size (the encoder re-opened)
  uint64_t frames_forwarded = 0;     // of frames_out: the publisher's own frames (bypass forwarding)
  // Frames forwarded on arrival whose decode was given up (the executor seconds behind): the
  // viewers had them; the session's decoder resumed at the next keyframe, so a switch to
  // anonymize meanwhile waits for it (nothing leaves uncovered).
  uint64_t decodes_given_up = 0;
  uint64_t publisher_keyframe_requests = 0;  // asked for to resume forwarding (WHIP ingest: RTCP PLI)
  bool forwarding = false;           // the last frame out was forwarded
  // Load shedding (server/speed_control.h): the level (0 = as configured) of max_shed_level,
  // the encoder's speed step and setting, the detection cadence in frames, whether the detector
  // is shown the trimmed window (privacy.detect_trim, or shed); overloaded: the last window
  // overused at the last level; falling_behind: and its frames went stale or later than the
  // frame interval (SpeedControl::falling_behind).
  int shed_level = 0, max_shed_level = 0, encoder_speed_step = 0, detect_every = 0;
  bool detect_trimmed = false;
  std::string encoder_speed;
  bool overloaded = false, falling_behind = false;
  uint64_t shed_steps_up = 0, shed_steps_down = 0;
  uint64_t shed_early_verdicts = 0;  // windows judged overused before their end (server.shed_judge_early)
  int shed_start_level = 0;  // the level it was started at from the node's load (StartAtLevel; 0: none)
  PrivacyCounters privacy;
  RtpReceiverStats rtp;
  UdpRelayStats audio;
  double last_packet_age_ms = -1;  // -1: nothing received yet
  double age_ms = 0;               // since the session started
  std::map<std::string, ViewerStats> viewer_detail;
  double received_fps = 0, sent_fps = 0;       // over the last second
  std::map<std::string, StageSummary> stages;  // per stage, and "processing" (first packet in -> last out)
  bool has_publisher = false;                  // webrtc ingest: a WHIP publisher is attached
  WhipIngestStats publisher;                   // webrtc ingest
  std::map<std::string, WhepViewerStats> web_viewers;
};

class LiveSession {
 public:
  static Result<std::unique_ptr<LiveSession>> Start(const std::string& id, const LiveSessionConfig& c,
                                                    DetectionSink* scheduler, uint64_t scheduler_session,
                                                    MetricsRegistry* metrics,
                                                    std::shared_ptr<FrameExecutor> executor = nullptr);
  ~LiveSession();  // stops the worker and every pipeline, removes its metric series
  const std::string& id() const { return id_; }
  const LiveSessionConfig& config() const { return cfg_; }
  int ingest_port() const { return receiver_ ? receiver_->port() : 0; }
  int audio_port() const { return audio_ ? audio_->port() : 0; }
  // A new viewer gets a keyframe on the next frame. audio_port 0: video only.
  Status AddViewer(const std::string& host, int video_port, int audio_port = 0);
  void RemoveViewer(const std::string& host, int video_port, int audio_port = 0);
  // WebRTC ingest (config ingest = webrtc): answers a WHIP offer (blocks the
  // calling thread for the negotiation). One publisher per session.
  Status AttachPublisher(const Offer& offer, const WebRtcPeerConfig& c, std::string* answer);
  // A WHEP viewer under `key`: answers its offer (blocks); it gets the next keyframe.
  Status AddWebViewer(const std::string& key, const Offer& offer, const WebRtcPeerConfig& c, std::string* answer);
  bool RemoveWebViewer(const std::string& key);
  // WebRTC viewers whose connection failed or closed, or that did not
  // connect within connect_timeout_ms: key -> why. The owner removes them.
  std::map<std::string, std::string> DeadWebViewers(double connect_timeout_ms);
  // A command posted to the session's worker (its serial executor on the frame executor, or its
  // own thread) and applied between two of its frames: it returns once applied. The frame in
  // flight when it was called has then left, and every frame after is processed in m; a frame
  // the ingest thread forwards on arrival checks the mode under emit_mu_, which the command
  // takes. The first frame encoded in a mode other than the last one's is a keyframe: an inter
  // frame would carry the previous mode's picture into the new one for a few frames (measured:
  // 3 frames of residual detail after bypass -> full_blur). previous: the mode it replaced.
  // kUnavailable: the worker did not take it within timeout_ms (nothing changed).
  static constexpr double kCommandTimeoutMs = 2000;
  Status SetMode(Mode m, Mode* previous = nullptr, double timeout_ms = kCommandTimeoutMs);
  Mode mode() const { return mode_.load(); }
  // Fault injection (tests): the worker burns this much CPU per frame in the middle of its work
  // (after the privacy stage, before the encode), as a neighbour taking the core would; 0 = off.
  void InjectWorkerCpuMs(double ms) { inject_cpu_ms_ = ms; }
  LiveSessionStats stats() const;
  // CPU the session's own work took (its decode, privacy and encode, on whichever thread ran
  // them), ms since it started: the capacity model learns from it (server/capacity.h).
  double cpu_ms() const { return cpu_ms_.load(); }
  // Its encode calls' own thread CPU (ms) and frames so far, at each encoder speed step.
  void EncodeBySteps(double* cpu_ms, uint64_t* frames) const {
    for (int k = 0; k < VideoEncoder::kMaxSpeedSteps; ++k) {
      cpu_ms[k] = enc_cpu_ms_[size_t(k)].load();
      frames[k] = enc_frames_[size_t(k)].load();
    }
  }
  // Its encoder's last speed step (0 before it has an encoder).
  int encoder_steps() const { return enc_max_step_.load(); }
  // The speed step its encoder runs at now (0 before it has an encoder).
  int encoder_step() const { return enc_step_.load(); }
  // Load shedding has judged none of its windows yet (its first frames, or server.shed_warmup_s).
  bool shed_warming_up() const { return shed_warming_.load(); }
  // Start at this shed level (the node's load, SessionManager::StartLevel): any thread; the
  // worker takes it at its next frame while the session is still warming up, never lowering the
  // level (SpeedControl::StartAt).
  void StartAtLevel(int level) {
    for (int cur = start_hint_.load(); level > cur && !start_hint_.compare_exchange_weak(cur, level);) {
    }
  }
  // Whether the node had room in its last second (its CPU left one more session's planned cost
  // inside its budget; SessionManager's housekeeping): any thread; the worker's load shedding reads it when it judges a window
  // (SpeedControl::set_node_room).
  void SetNodeRoom(bool room) { node_room_.store(room); }
  // What the capacity model needs once a second, without building stats().
  uint64_t frames_in() const { return frames_in_.load(); }
  int width() const { return out_w_.load(); }
  int height() const { return out_h_.load(); }
  double received_fps() const { return fps_in_.load(); }
  // The last frame that left the privacy stage (exactly what the viewers
  // get), scaled to at most max_width px wide and JPEG-encoded now: the
  // frame path only keeps a reference to its frame. The JPEG is reused while
  // no newer frame has left. Error: no frame has left yet.
  Result<SessionSnapshot> Snapshot(int max_width);
  // The figures over the last history_points intervals, oldest first.
  std::vector<HistoryPoint> History() const { return history_.Points(); }
  // Non-empty when a pipeline failed: the session must be ended with it.
  std::string error();
  // The owner's housekeeping (a few times a second): updates rate and RTP
  // gauges; returns the stats it read.
  LiveSessionStats Tick();

 private:
  struct Decoded {
    FramePtr frame;
    uint64_t ingest_seq = 0;  // the input's number (bypass forwarding supersedes older ones)
    uint32_t rtp_ts = 0;
    // When it was decoded; with the decode on the executor, when its compressed frame was handed
    // over, and decode_ms is how long its decode took since (not waiting: queue_wait leaves it out).
    double decoded_ms = 0;
    double decode_ms = 0;
    double arrival_ms = 0;
    // Its deadline: budget_ms after its paced hand-over (PacedHandOver), which is decoded_ms
    // unless it came bunched with the frames before it.
    double due_ms = 0;
    // Its place in arrival order (frames_in_ when it was decoded): detection cadence and a
    // result's age count frames by it. Not frames_in_ when it is processed: a frame that waited
    // behind others would count as newer than it is, and the tracker would extrapolate its
    // masks by too few frames.
    int64_t index = 0;
  };
  // A compressed frame handed over by the ingest thread, waiting for the executor to decode it.
  struct Pending {
    EncodedFrame frame;
    uint32_t rtp_ts = 0;
    double handed_ms = 0;
    uint64_t seq = 0;      // its ingest_seq_
    uint64_t out_seq = 0;  // > 0: forwarded on arrival (ForwardOnArrival) as output frame out_seq
  };
  // The most compressed frames that may wait (2 s at 30 fps): past it the executor is hopelessly
  // behind; what waits is dropped and decoding resumes at the publisher's next keyframe.
  static constexpr size_t kMaxPending = 60;
  LiveSession(const std::string& id, const LiveSessionConfig& c);
  void OnEncoded(EncodedFrame&& f, uint32_t rtp_ts);  // receiver thread: DecodeAndQueue, exceptions caught
  // Decodes f and queues its pictures for the privacy stage (or forwards it in bypass). handed:
  // the frame was handed over to the executor (decode on the executor), as this Pending says
  // (its frame already moved into f); null: it came straight from the ingest thread.
  void DecodeAndQueue(EncodedFrame&& f, uint32_t rtp_ts, const Pending* handed = nullptr);
  void HandOver(EncodedFrame&& f, uint32_t rtp_ts);    // receiver thread, decode on the executor
  void DecodeHandedOver();                             // executor: decodes every frame waiting, in order
  std::optional<double> NextDue();                     // executor: the deadline of the next work waiting
  void Work();                                         // the session's own worker thread
  std::optional<double> RunOne();                      // a frame executor's thread: one frame
  bool RunItem(Decoded& item);                         // worker: ProcessOne; false: the session failed
  static double Due(const Decoded& d) { return d.due_ms; }  // leaves by then, or is stale
  void ProcessOne(Decoded& item);                      // worker thread
  // Decoding thread (the executor, or the ingest thread): sends the publisher's own frame in
  // bypass when the viewers can decode it (bypass forwarding); false: the worker processes it.
  bool MaybeForward(const EncodedFrame& in, Decoded& item);
  // Ingest thread, decode on the executor: while the decoding thread forwards (forwarding_now_)
  // and every earlier frame has been sent or queued, sends the publisher's frame at once, before
  // its decode (which then only keeps the picture and checks the stream): a forwarded frame
  // never waits for the executor. Returns its output number, 0: not sent (the decode decides).
  uint64_t ForwardOnArrival(const EncodedFrame& f, uint32_t rtp_ts, uint64_t seq, double arrival_ms);
  // Counts a frame forwarded (either way) and settles the keyframe wishes it answers.
  void Forwarded(bool keyframe);
  // Keeps a sent frame's picture for snapshots (output number seq) and counts a size change.
  void KeepOutput(FramePtr frame, uint64_t seq, Mode mode, bool fail_closed);
  // Sends a frame's compressed form and keeps its picture for snapshots. rep: the privacy
  // stage's report of an encoded frame (worker thread); null: the publisher's own frame,
  // forwarded (decoding thread). false: a forwarded frame superseded it (nothing sent).
  bool Emit(Decoded& item, const EncodedFrame* frames, size_t n, double encoded_ms, const FrameReport* rep);
  void OnSent(const RtpFrame& f, double sent_ms);      // viewer threads
  void Fail(const std::string& why);
  void RequestKeyframe(double min_gap_ms);             // any thread: at most one forced keyframe per gap
  bool AskPublisherForKeyframe();                      // any thread: WHIP ingest only, at most once a second

  const std::string id_;
  const LiveSessionConfig cfg_;
  const double started_ms_;
  mutable Mutex web_mu_;
  std::unique_ptr<RtpReceiver> receiver_;      // IngestKind::kRtp
  std::unique_ptr<WhipIngest> whip_ GUARDED_BY(web_mu_);  // IngestKind::kWebRtc, once attached
  std::atomic<WhipIngest*> whip_raw_{nullptr};  // the same, for the receiving thread (keyframe requests)
  struct WebViewer {
    std::shared_ptr<WhepViewer> peer;
    double added_ms = 0;
  };
  std::map<std::string, WebViewer> web_viewers_ GUARDED_BY(web_mu_);
  std::atomic<double> last_publisher_key_ms_{0};
  std::unique_ptr<RtpSender> sender_;
  std::unique_ptr<UdpRelay> audio_;
  std::unique_ptr<VideoDecoder> decoder_;     // the decoding thread only (executor or receiver)
  std::unique_ptr<VideoEncoder> encoder_;     // worker thread only (created on the first frame, re-opened at a new size)
  std::atomic<int> out_w_{0}, out_h_{0};      // the size of the last frame sent
  int enc_w_ = 0, enc_h_ = 0;                 // the encoder's size (worker thread)
  // Bypass forwarding, decided on the decoding thread: on from a publisher keyframe; off at a
  // frame that did not decode, a mode other than bypass, or a new viewer (veil's encoder gives
  // it a keyframe at once, forwarding resumes at the publisher's next). Forwarded frames never
  // wait in the worker's queue, so none is dropped as stale or evicted: the viewers' reference
  // chain holds whatever the load. While forwarding, veil's encoder sees nothing: its next frame
  // is a keyframe (encoded_after_forward_).
  bool forwarding_ = false;                   // decoding thread
  std::atomic<bool> bridge_wanted_{false};    // a viewer joined: bridge to the publisher's next keyframe
  uint64_t encoded_after_forward_ = 0;        // worker thread: forwarded_ at its last encode
  double next_keyframe_ms_ = 0;               // worker thread: the next periodic keyframe (arrival time)
  int slot_cadence_ = 0;                      // worker thread: the cadence the detection slot was set for
  // The decoding thread's pacing of hand-overs (PacedHandOver): the last frame's paced time and
  // RTP timestamp; none before the first frame.
  std::optional<double> paced_ms_;
  uint32_t paced_ts_ = 0;
  double last_keyframe_ms_ = -1e300;          // worker thread: arrival time of the last keyframe out
  std::atomic<uint64_t> ingest_seq_{0};       // decoding thread: every input frame, decoded or not
  std::atomic<bool> forwarding_now_{false};
  std::atomic<uint64_t> forwarded_{0}, publisher_key_requests_{0}, decodes_given_up_{0};
  // Emit() runs on both threads in turn; a worker frame older than the last forwarded one is
  // dropped (queued before a forwarded run began, it would break the chain the viewers decode).
  Mutex emit_mu_;
  uint64_t last_forwarded_seq_ GUARDED_BY(emit_mu_) = 0;
  std::atomic<uint64_t> resolution_changes_{0};
  std::unique_ptr<PrivacyStage> privacy_;     // worker thread only
  SpeedControl speed_;                        // worker thread only
  void Shed(double now_ms);                   // worker thread: applies speed_'s level
  // What stats() shows of the shedding (the worker writes).
  std::atomic<int> shed_level_{0}, max_shed_level_{0}, enc_step_{0}, detect_every_{0};
  std::atomic<bool> detect_trimmed_{false};
  int trim_steps_ = 0;  // worker: 1 when the trimmed window is a shedding level at this frame size
  std::atomic<bool> overloaded_{false}, falling_behind_{false};
  std::atomic<double> inject_cpu_ms_{0};
  std::atomic<double> last_shed_ms_{-1};      // the worker's last Shed(): an idle worker's verdict expires
  std::atomic<uint64_t> shed_ups_{0}, shed_downs_{0}, shed_early_{0};
  std::atomic<bool> shed_warming_{true};
  std::atomic<bool> node_room_{false};  // SetNodeRoom's
  // Worker thread: the session's CPU a second over its last second or so (what a take-back asks
  // the node's budget for a share of), and where that second began.
  double cpu_rate_ms_per_s_ = 0, cpu_rate_since_ms_ = -1, cpu_rate_mark_ms_ = 0;
  std::atomic<int> start_hint_{0}, start_level_{0};  // StartAtLevel's; the level the worker took
  mutable Mutex speed_name_mu_;
  std::string speed_name_ GUARDED_BY(speed_name_mu_);
  bool speed_name_empty_ = true;              // worker thread
  std::atomic<uint64_t> evicted_{0};          // decoding or receiving thread: frames pushed out of the queue
  uint64_t seen_evicted_ = 0;                 // worker thread: of those, reported to speed_
  LatestQueue<Decoded> queue_;
  bool decode_on_executor_ = false;           // set once at Start
  Mutex pending_mu_;
  std::deque<Pending> pending_ GUARDED_BY(pending_mu_);
  bool pending_to_key_ GUARDED_BY(pending_mu_) = false;  // dropped a backlog: wait for a keyframe
  // Frames handed over but not forwarded on arrival whose decode has not yet sent or queued them:
  // while any is, a later frame may not be forwarded on arrival (it would overtake them).
  uint64_t undecided_ GUARDED_BY(pending_mu_) = 0;
  std::thread worker_;                        // without an executor
  std::shared_ptr<FrameExecutor> executor_;   // the server's; null: worker_
  struct ExecutorClient : FrameExecutor::Client {
    LiveSession* s;
    explicit ExecutorClient(LiveSession* p) : s(p) {}
    std::optional<double> RunOne() override { return s->RunOne(); }
  } executor_client_{this};
  std::atomic<bool> stop_{false};
  // Commands other threads post (SetMode): the worker applies them before each frame it takes.
  CommandQueue commands_;
  void ApplyCommands();  // worker (the executor's turn, or the session's own thread)
  std::atomic<Mode> mode_{Mode::kAnonymize};  // written by a command, under emit_mu_
  std::optional<Mode> encoded_mode_;          // worker thread: the current encoder's last frame's mode
  std::atomic<bool> want_keyframe_{true};
  std::atomic<double> last_keyframe_request_ms_{0};
  std::atomic<uint64_t> frames_in_{0}, frames_out_{0}, stale_{0}, decode_errors_{0};
  std::atomic<double> last_packet_ms_{-1};
  std::atomic<double> cpu_ms_{0};
  std::array<std::atomic<double>, VideoEncoder::kMaxSpeedSteps> enc_cpu_ms_{};
  std::array<std::atomic<uint64_t>, VideoEncoder::kMaxSpeedSteps> enc_frames_{};
  std::atomic<int> enc_max_step_{0};
  std::atomic<double> fps_in_{0}, fps_out_{0};
  mutable Mutex mu_;
  PrivacyCounters privacy_counters_ GUARDED_BY(mu_);  // copied from the worker
  std::string error_ GUARDED_BY(mu_);
  // RTP timestamp -> arrival of the frame's first packet, for processing latency.
  struct Arrival {
    uint32_t rtp = 0;
    double ms = 0, encoded_ms = 0;
  };
  Arrival arrivals_[64] GUARDED_BY(mu_);
  size_t arrival_next_ GUARDED_BY(mu_) = 0;
  // The last output frame (worker thread writes, Snapshot() reads).
  struct Output {
    FramePtr frame;
    uint64_t seq = 0;
    Mode mode = Mode::kAnonymize;
    bool fail_closed = false;
    double at_ms = 0;
  };
  mutable Mutex out_mu_;
  Output last_out_ GUARDED_BY(out_mu_);
  Mutex snap_mu_;
  SessionSnapshot snap_cache_ GUARDED_BY(snap_mu_);  // frame 0: empty
  int snap_cache_width_ GUARDED_BY(snap_mu_) = 0;    // the max_width it was made for
  SessionHistory history_;      // Tick() feeds it
  RecentQuantile recent_total_{5000};  // processing latency over the last 5 s (Tick() feeds it)
  std::atomic<double> recent_p99_ms_{-1};  // its p99, as of the last Tick()
  // Tick() state.
  double tick_ms_ = 0;
  uint64_t tick_in_ = 0, tick_out_ = 0, tick_viewer_drops_ = 0, tick_lost_ = 0;
  // Metrics (the registry outlives the session).
  MetricsRegistry* metrics_ = nullptr;
  Histogram *m_queue_ = nullptr, *m_decode_ = nullptr, *m_preprocess_ = nullptr, *m_detect_ = nullptr,
            *m_track_ = nullptr, *m_mosaic_ = nullptr, *m_encode_ = nullptr, *m_send_ = nullptr,
            *m_total_ = nullptr, *m_cut_wait_ = nullptr;
  Counter* m_held_ = nullptr;
  Counter* m_fast_cuts_ = nullptr;
  int64_t enc_fast_cuts_seen_ = 0;  // the current encoder's fast_cut_frames() already counted
  int held_run_ = 0;  // frames held in a row (privacy.cut_hold_frames); worker only
  Counter *m_forwarded_ = nullptr, *m_keyframes_ = nullptr, *m_decodes_given_up_ = nullptr;
  Gauge *m_shed_level_ = nullptr, *m_enc_step_ = nullptr;
  Counter *m_stale_ = nullptr, *m_fail_closed_ = nullptr, *m_in_ = nullptr, *m_out_ = nullptr,
          *m_viewer_drops_ = nullptr, *m_lost_ = nullptr, *m_decode_errors_ = nullptr;
  Gauge *m_fps_in_ = nullptr, *m_fps_out_ = nullptr, *m_jitter_ = nullptr, *m_viewers_ = nullptr;
};

}  // namespace veil
