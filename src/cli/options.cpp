#include "cli/options.h"

#include <cstdio>

extern char** environ;

namespace veil::cli {

void Fail(int* rc, int code, const std::string& message) {
  std::fprintf(stderr, "veil: %s\n", message.c_str());
  *rc = code;
}

Result<cv::Size> ParseBoundedSize(const std::string& s) {
  auto size = ParseSize(s);
  if (!size) return size;
  if (size->width < 32 || size->height < 32 || size->width > 4096 || size->height > 4096)
    return Status::Error("size " + s + " out of range (32x32 .. 4096x4096)");
  return size;
}

void AddConfigOptions(CLI::App& app, ConfigOptions& o, const std::map<std::string, std::string>& renames,
                      FlagSet set) {
  app.add_option("--config", o.file, "TOML configuration file (see docs/config.md)");
  app.add_option("--set", o.sets, "Set any config key: --set section.key=value (repeatable)");
  app.add_flag("--print-config", o.print, "Print the effective configuration with each value's source and exit");
  for (const auto& k : ConfigKeys()) {
    auto it = renames.find(k.key);
    const std::string flag = it != renames.end() ? it->second : k.flag;
    if (flag.empty()) continue;
    auto in = [&](const char* section) { return k.key.rfind(section, 0) == 0; };
    if ((in("server.") || in("webrtc.")) && set != FlagSet::kServe) continue;
    if (in("inference.") && set == FlagSet::kJob) continue;
    if (in("worker.") && set != FlagSet::kWorker) continue;
    CLI::Option* opt = app.add_option("--" + flag, o.flag_text[k.key], k.doc + " [" + k.key + "]");
    o.flags.emplace_back(k.key, opt);
  }
}

Result<Config> ConfigOptions::Build() const {
  Config c;
  if (!file.empty())
    if (Status s = c.LoadFile(file); !s) return s;
  if (Status s = c.LoadEnv(environ); !s) return s;
  for (const auto& [key, opt] : flags)
    if (opt->count() > 0)
      if (Status s = c.SetText(key, flag_text.at(key), Source::kFlag); !s) return s;
  for (const std::string& kv : sets) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) return Status::Error("--set needs key=value, got '" + kv + "'");
    if (Status s = c.SetText(kv.substr(0, eq), kv.substr(eq + 1), Source::kFlag); !s) return s;
  }
  return c;
}

Result<Resolved> Resolve(const ConfigOptions& o) {
  auto c = o.Build();
  if (!c) return c.status();
  Resolved r;
  auto p = c->BuildPrivacy();
  if (!p) return p.status();
  auto d = c->BuildDetector();
  if (!d) return d.status();
  auto e = c->BuildEncoder();
  if (!e) return e.status();
  r.privacy = *p;
  r.detector = *d;
  r.encoder = *e;
  r.decode_threads = c->settings().decode_threads;
  r.config = std::move(*c);
  return r;
}

bool PrintConfigIfAsked(const ConfigOptions& o, const Config& c) {
  if (!o.print) return false;
  std::fputs(c.Dump().c_str(), stdout);
  return true;
}

}  // namespace veil::cli
