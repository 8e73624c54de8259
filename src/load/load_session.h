// One session of a veil load stage (publisher, viewer, the send/receive log), and the stage's
// creation of them through the control API. Internal to veil load (load_runner.cpp).
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "client/api_client.h"
#include "client/rtp_publisher.h"
#include "client/rtp_viewer.h"
#include "load/load_runner.h"
#include "media/video_codec.h"

namespace veil {

struct LoadSession {
  std::string id;
  std::unique_ptr<ApiClient> api;  // bound to the node that holds the session (after any 307)
  std::string node;                // that node's URL
  std::unique_ptr<RtpPublisher> pub;
  std::unique_ptr<RtpViewer> viewer;
  std::mutex mu;
  std::unordered_map<uint32_t, double> sent;  // RTP ts -> send time; guarded by mu
  std::deque<uint32_t> order;                 // eviction order; guarded by mu
  std::vector<double> latencies;              // in the window; guarded by mu
  std::vector<double> arrivals;               // each latency's arrival (NowMs), in step; guarded by mu
  int received = 0, sent_in_window = 0;       // guarded by mu
  double first_sent = 0, last_sent = 0;       // guarded by mu
  int64_t frames_sent = 0;                    // guarded by mu
  // Where its frame schedule began: the earliest of its first 5 frames' sends less their place
  // in it (a publisher woken late sends its first frame late, not its schedule). guarded by mu
  double schedule0 = 0;
  double frame_ms = 1000.0 / 30;  // the clip's frame interval (set at creation)
  double window_from = 1e300, window_to = 1e300;  // guarded by mu
  void OnSent(uint32_t ts, double ms);     // the publisher sent frame ts at ms (NowMs clock)
  void OnArrival(uint32_t ts, double ms);  // the viewer got frame ts at ms
};
using LoadSessions = std::vector<std::unique_ptr<LoadSession>>;

// The stage's sessions the server itself ended (load shedding's last level, a failure): id ->
// the session_ended event's detail, from each node's event log (GET /v1/events, through a
// session's own client: it is bound to that session's node). The tool's own DELETEs are not
// among them: they come after.
std::map<std::string, std::string> EndedByServer(const LoadSessions& sessions);

// Creates a stage's n sessions through the entry URL (ids id_prefix + index), then gives each
// an RTP viewer and a publisher whose start is staggered over one GOP (gop_ms), its frame phase
// as o.frame_phase asks (frame_ms: the clip's frame interval). With o.run_admitted, a
// 503 after the first session ends the creation: the remaining ones are offered too and must be
// refused (res.refused, res.refusal), and the starts, phases and clocks are spread over the
// admitted sessions alone. Returns why the stage cannot run, or "".
std::string CreateSessions(const LoadOptions& o, const ClipPtr& clip, VideoCodec codec, double gop_ms,
                           double frame_ms, const std::string& id_prefix, int n, LoadSessions& sessions,
                           std::set<std::string>& ours, StageResult& res);

}  // namespace veil
