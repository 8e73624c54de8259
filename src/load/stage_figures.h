// A veil load stage's figures from what its measured window saw: each session's send/receive
// log (load_session.h), its viewer's RTP counters and every node's /metrics at the window's two
// ends. Client side: received FPS, end-to-end latency, viewer loss; server side: deltas of the
// stage's own sessions' series (processing and per-stage histograms, stale drops, fail-closed
// frames, shed levels), per node and in total; then the pass/fail verdict.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "client/rtp_viewer.h"
#include "load/load_runner.h"
#include "load/load_session.h"
#include "load/page_poller.h"
#include "load/prom_text.h"

namespace veil {

using NodeMetrics = std::map<std::string, std::vector<PromSample>>;  // node URL -> its /metrics

struct StageWindow {
  double t_warm = 0, t_end = 0;         // the sessions' measured window (NowMs clock)
  double wall0 = 0, wall1 = 0;          // when the two /metrics snapshots were taken (NowMs)
  double tool_cpu0 = 0, tool_cpu1 = 0;  // the tool's own CPU ms at those instants
  double frame_ms = 1000.0 / 30;        // the clip's frame interval
  std::set<std::string> node_urls;      // every node measured: the entry and each session's
  NodeMetrics m0, m1;                   // each node's /metrics at wall0 and wall1
  std::vector<ViewerCounters> v0, v1;   // each session's viewer counters then, in session order
  PagePollCounts page0, page1;          // the page poller's (rounds 0: none ran)
};

// Fills res's figures and verdict from the window. res.ended (the sessions the server ended)
// must be set first: their viewers' figures count, their server-side series (gone) do not, and
// any of them fails the stage.
void FillStageFigures(const LoadOptions& o, const LoadSessions& sessions, const StageWindow& w, StageResult& res);

// The q-quantile of v (nearest rank; 0 when empty).
double Percentile(std::vector<double> v, double q);

}  // namespace veil
