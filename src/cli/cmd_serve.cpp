// veil serve: the live relay. Control API over HTTP, RTP in and out, one
// shared inference scheduler; with cluster.redis, one node of many (src/cluster).
// SIGINT: refuse new sessions, end every session (viewers get what was already
// encoded), stop the API, exit 0. SIGTERM: the same, after a drain when
// server.drain_timeout_s > 0.
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <memory>

#include "cli/cmd_anonymize.h"
#include "cli/options.h"
#include "cli/service.h"
#include "cluster/registry.h"
#include "core/clock.h"
#include "server/http_api.h"
#include "server/ai_wiring.h"
#include "server/session_manager.h"

namespace veil::cli {
namespace {
// The settings that change what a session costs (server.capacity_state keeps learned costs only
// for the same): the media, privacy and detection stages' keys, the inference keys, and the
// server keys that place a session's work.
std::string CostSettings(const Config& c) {
  static const char* const kSections[] = {"privacy.", "mosaic.", "tracker.", "detector.", "encoder.", "decoder.",
                                          "inference."};
  static const char* const kServer[] = {"server.frame_executor",     "server.frame_threads",
                                        "server.decode_on_executor", "server.detect_on_executor",
                                        "server.bypass_forward",     "server.stagger_keyframes",
                                        "server.stagger_detections"};
  return c.Values([](const std::string& key) {
    for (const char* s : kSections)
      if (key.rfind(s, 0) == 0) return true;
    for (const char* k : kServer)
      if (key == k) return true;
    return false;
  });
}
}  // namespace

void RegisterServe(CLI::App& app, int* rc) {
  struct Opts {
    ConfigOptions config;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand(
      "serve", "Run the live relay: RTP or WebRTC (WHIP) in, faces pixelated, RTP or WebRTC (WHEP) out; HTTP API and pages");
  AddConfigOptions(*sub, o->config, {}, FlagSet::kServe);
  sub->callback([o, rc] {
    auto cfg = Resolve(o->config);
    if (!cfg) return Fail(rc, 2, cfg.error());
    auto server = cfg->config.BuildServer();
    if (!server) return Fail(rc, 2, server.error());
    if (PrintConfigIfAsked(o->config, cfg->config)) return;

    sigset_t sigs;
    PrepareService(&sigs);  // before any thread starts

    ServerDeps deps;
    deps.server = *server;
    deps.privacy = cfg->privacy;
    deps.encoder = cfg->encoder;
    deps.detector = cfg->detector;
    deps.decode_threads = cfg->decode_threads;
    deps.cost_settings = CostSettings(cfg->config);
    if (deps.encoder.threads > 1)
      spdlog::warn("encoder.threads = {}: libvpx's row threads busy-wait for each other, and on a node whose cores "
                   "the sessions already fill they spin against the frame pool: 2 sessions on 2 cores fell from 30 "
                   "to 8-28 fps in a measurement (docs/figures.md, \"Encoder threads\"); 1 is the default",
                   deps.encoder.threads);
    MetricsRegistry metrics;
    auto parts = StartServerParts(deps, &metrics);  // the AI targets
    if (!parts) return Fail(rc, 2, parts.error());
    auto sessions = SessionManager::Start(deps, &metrics, std::move(*parts));
    if (!sessions) return Fail(rc, 2, sessions.error());
    auto api = HttpApi::Start(sessions->get(), &metrics, *server);
    if (!api) return Fail(rc, 2, api.error());
    std::printf("veil serve: listening on http://%s:%d\n", server->listen_host.c_str(),
                (*api)->port());
    std::fflush(stdout);
    spdlog::info("control API on http://{}:{} (token {}), RTP on {}, {}, mode {}", server->listen_host,
                 (*api)->port(), server->token.empty() ? "off" : "required", server->rtp_address,
                 server->max_sessions > 0 ? fmt::format("max {} sessions", server->max_sessions)
                                          : std::string("sessions admitted by measured capacity"),
                 ModeName(cfg->privacy.mode));
    spdlog::info("pages: /publish (WHIP, token {}), /watch (WHEP, token {}), /operator; WebRTC ICE on {}",
                 server->webrtc.publish_token.empty() ? "off: anyone who reaches this server may publish" : "required",
                 server->webrtc.view_token.empty() ? "off" : "required", server->webrtc.ice_address);
    // The cluster: this node's record and sessions in Redis, placement and redirects.
    std::unique_ptr<ClusterRegistry> cluster;
    if (!server->cluster_redis.empty()) {
      ClusterSettings cs;
      cs.redis = server->cluster_redis;
      const std::string port = std::to_string((*api)->port());
      char host[256] = {};
      gethostname(host, sizeof host - 1);
      cs.node_id = server->cluster_node_id.empty() ? std::string(host) + "-" + port : server->cluster_node_id;
      cs.public_url = server->cluster_public_url.empty() ? "http://" + server->listen_host + ":" + port
                                                          : server->cluster_public_url;
      cs.media_address = server->rtp_address;
      SessionManager* sm = sessions->get();
      auto reg = ClusterRegistry::Start(
          cs,
          [sm] {
            NodeState st;
            const CapacityState c = sm->Capacity();
            st.session_ids = sm->SessionIds();
            st.sessions = int(st.session_ids.size());
            st.capacity = c.max_sessions > 0 ? c.max_sessions : c.capacity_sessions;
            st.free_sessions = sm->FreeSessions();
            for (const VideoCodecInfo& vc : VideoCodecs())
              for (Mode m : {Mode::kAnonymize, Mode::kBypass, Mode::kFullBlur})
                st.free_by_kind[std::string(vc.name) + "/" + ModeName(m)] = sm->FreeSessions(vc.codec, m);
            st.headroom = c.headroom;
            st.draining = sm->draining();
            st.ready = sm->NotReadyReason().empty() || st.free_sessions == 0;  // full is not unready
            return st;
          },
          &metrics);
      if (!reg) return Fail(rc, 2, reg.error());
      cluster = std::move(*reg);
      (*api)->SetCluster(cluster.get());
      sm->SetChangeHook([c = cluster.get()] { c->BeatSoon(); });
      spdlog::info("cluster: node {} at {} in {} ({})", cs.node_id, cs.public_url, cs.redis, cluster->status());
    }
    // SIGINT: stop now. SIGTERM or POST /v1/drain: drain (server.drain_timeout_s > 0) -- no new
    // sessions, running ones go on until their publishers leave or the timeout passes -- then stop.
    // A second SIGTERM during a drain stops at once.
    const double drain_ms = server->drain_timeout_s * 1000;
    std::string why, end_reason = "shutdown";
    double drain_started = -1;
    bool was_empty = false;
    while (why.empty()) {
      const int sig = WaitForStopFor(sigs, 200);
      if (sig == SIGINT) why = "SIGINT";
      else if (sig == SIGTERM && (drain_ms <= 0 || drain_started >= 0)) why = "SIGTERM";
      else if (sig == SIGTERM) (*sessions)->Drain("SIGTERM");
      if (!why.empty()) break;
      if (drain_started < 0 && (*sessions)->draining()) {
        drain_started = NowMs();
        if (cluster) cluster->Beat();
        spdlog::info("draining: {} session(s) go on for up to {:g} s", (*sessions)->session_count(),
                     server->drain_timeout_s);
      }
      if (drain_started >= 0) {
        // Idle (nothing left, nothing being torn down) on two ticks in a row: the request that
        // ended the last session has had its answer before the API stops.
        const bool empty = (*sessions)->Idle();
        if (empty && was_empty) why = "drained";
        was_empty = empty;
        if (!why.empty()) break;
        if (NowMs() - drain_started >= drain_ms) {
          why = "drain timeout";
          end_reason = "drain_timeout";
        }
      }
    }
    spdlog::info("{}: ending {} session(s)", why, (*sessions)->session_count());
    (*sessions)->Shutdown(end_reason);
    (*sessions)->SetChangeHook(nullptr);
    cluster.reset();  // deregisters while the API still answers
    (*api)->Stop();
    sessions->reset();
    spdlog::info("stopped cleanly");
    spdlog::shutdown();
  });
}

}  // namespace veil::cli
