// veil: real-time face anonymization for live video. Wiring only.
#include <CLI/CLI.hpp>

#include "cli/cmd_anonymize.h"

extern "C" {
#include <libavutil/log.h>
}

int main(int argc, char** argv) {
  av_log_set_level(AV_LOG_ERROR);
  CLI::App app{"veil: pixelates every face in live video"};
  app.require_subcommand(1);
  int rc = 0;
  veil::cli::RegisterAnonymize(app, &rc);
  veil::cli::RegisterBench(app, &rc);
  veil::cli::RegisterEval(app, &rc);
  veil::cli::RegisterServe(app, &rc);
  veil::cli::RegisterPublish(app, &rc);
  veil::cli::RegisterView(app, &rc);
  veil::cli::RegisterLoad(app, &rc);
  veil::cli::RegisterWorker(app, &rc);
  veil::cli::RegisterBenchAi(app, &rc);
  veil::cli::RegisterDetect(app, &rc);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "veil: %s\n", e.what());
    return 1;
  }
  return rc;
}
