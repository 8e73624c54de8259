// veil serve: the live relay. Control API over HTTP, RTP in and out, one
// shared inference scheduler. SIGTERM/SIGINT: refuse new sessions, end every
// session (viewers get what was already encoded), stop the API, exit 0.
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <memory>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/cmd_anonymize.h"
#include "cli/options.h"
#include "server/http_api.h"
#include "server/session_manager.h"

namespace veil::cli {

void RegisterServe(CLI::App& app, int* rc) {
  struct Opts {
    ConfigOptions config;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("serve", "Run the live relay: RTP in, faces pixelated, RTP out (HTTP control API)");
  AddConfigOptions(*sub, o->config, {}, FlagSet::kServe);
  sub->callback([o, rc] {
    auto cfg = Resolve(o->config);
    if (!cfg) return Fail(rc, 2, cfg.error());
    auto server = cfg->config.BuildServer();
    if (!server) return Fail(rc, 2, server.error());
    if (PrintConfigIfAsked(o->config, cfg->config)) return;

    // Signals are taken by sigwait below: block them before any thread starts.
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
    signal(SIGPIPE, SIG_IGN);
    auto log = spdlog::stderr_color_mt("veil");
    spdlog::set_default_logger(log);
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");

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
    std::printf("veil serve: listening on http://%s:%d\n", server->listen_host.c_str(), (*api)->port());
    std::fflush(stdout);
    spdlog::info("control API on http://{}:{} (token {}), RTP on {}, max {} sessions, mode {}", server->listen_host,
                 (*api)->port(), server->token.empty() ? "off" : "required", server->rtp_address,
                 server->max_sessions, ModeName(cfg->privacy.mode));
    int sig = 0;
    sigwait(&sigs, &sig);
    spdlog::info("{}: draining {} session(s)", sig == SIGTERM ? "SIGTERM" : "SIGINT", (*sessions)->session_count());
    (*sessions)->Shutdown();
    (*api)->Stop();
    sessions->reset();
    spdlog::info("stopped cleanly");
    spdlog::shutdown();
  });
}

}  // namespace veil::cli
