// veil worker: a remote AI target. Serves the detector over the KServe v2 /
// Open Inference Protocol gRPC API with the same batching scheduler the
// server uses in-process; `veil serve --targets HOST:PORT,...` uses it, and so
// can any KServe v2 client. SIGTERM/SIGINT: not ready, finish calls, exit 0.
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <thread>

#include "cli/cmd_anonymize.h"
#include "cli/options.h"
#include "cli/service.h"
#include "http/server.h"
#include "inference/worker_service.h"
#include "transport/net/udp.h"

namespace veil::cli {

void RegisterWorker(CLI::App& app, int* rc) {
  struct Opts {
    ConfigOptions config;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub =
      app.add_subcommand("worker", "Run a remote AI target: face detection over KServe v2 gRPC");
  AddConfigOptions(*sub, o->config, {}, FlagSet::kWorker);
  sub->callback([o, rc] {
    auto cfg = Resolve(o->config);
    if (!cfg) return Fail(rc, 2, cfg.error());
    auto ws = cfg->config.BuildWorker();
    if (!ws) return Fail(rc, 2, ws.error());
    if (PrintConfigIfAsked(o->config, cfg->config)) return;
    if (cfg->detector.family != "yunet")
      return Fail(rc, 2,
                  "veil worker serves the yunet detector family (detector.family = yunet), got '" +
                      cfg->detector.family + "'");

    sigset_t sigs;
    PrepareService(&sigs);  // before any thread starts

    WorkerOptions wo;
    wo.listen = ws->listen;
    wo.scheduler = ws->scheduler;
    const DetectorConfig dc = cfg->detector;
    auto source = std::make_shared<std::string>();
    MetricsRegistry metrics;
    auto worker = Worker::Start(
        wo, [dc, source]() { return LoadDetector(dc, source.get()); }, &metrics);
    if (!worker) return Fail(rc, 2, worker.error());
    const std::string host = ws->listen.substr(0, ws->listen.rfind(':'));
    std::printf("veil worker: listening on grpc://%s:%d (models yunet, yunet_u8)\n", host.c_str(),
                (*worker)->port());
    std::fflush(stdout);
    spdlog::info("detector {} ({}); {} inference thread(s), max batch {}, max wait {} us",
                 dc.family, *source, ws->scheduler.threads, ws->scheduler.max_batch, ws->scheduler.max_wait_us);
    if (!IsLoopback(host))
      spdlog::warn(
          "worker.listen {} is not loopback: the KServe v2 gRPC API has no authentication; "
          "keep it on a private network",
          ws->listen);

    http::Router routes;
    std::unique_ptr<http::Server> http;
    if (!ws->metrics_host.empty()) {
      routes.Get("/metrics", [&metrics](const http::Request&, http::Response& res) {
        res.SetContent(metrics.ExportText(), "text/plain; version=0.0.4; charset=utf-8");
      });
      routes.Get(
          "/healthz",
          [](const http::Request&, http::Response& res) { res.SetContent("{\"status\":\"ok\"}", "application/json"); },
          true);
      http::Limits lim;
      lim.threads = 2;
      lim.max_connections = 256;
      auto started = http::Server::Start(&routes, ws->metrics_host, ws->metrics_port, lim, &metrics);
      if (!started) return Fail(rc, 2, started.error());
      http = std::move(*started);
      spdlog::info("metrics on http://{}:{}/metrics", ws->metrics_host, http->port());
    }
    spdlog::info("{}: finishing calls in progress", WaitForStop(sigs));
    (*worker)->Shutdown();
    if (http) http->Stop();
    spdlog::info("stopped cleanly");
    spdlog::shutdown();
  });
}

}  // namespace veil::cli
