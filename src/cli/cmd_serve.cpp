// veil serve: the live relay. Control API over HTTP, RTP in and out, one
// shared inference scheduler. SIGTERM/SIGINT: refuse new sessions, end every
// session (viewers get what was already encoded), stop the API, exit 0.
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <memory>

#include "cli/cmd_anonymize.h"
#include "cli/options.h"
#include "cli/service.h"
#include "server/http_api.h"
#include "server/session_manager.h"

namespace veil::cli {

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
    MetricsRegistry metrics;
    auto sessions = SessionManager::Start(deps, &metrics);
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
    const char* sig = WaitForStop(sigs);
    spdlog::info("{}: draining {} session(s)", sig, (*sessions)->session_count());
    (*sessions)->Shutdown();
    (*api)->Stop();
    sessions->reset();
    spdlog::info("stopped cleanly");
    spdlog::shutdown();
  });
}

}  // namespace veil::cli
