// libFuzzer target: a configuration file (TOML) and VEIL_* environment values, as a user
// writes them -> every typed, validated structure veil builds from them.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/veil-fuzz-config-" + std::to_string(getpid()) + ".toml";
  const std::string text(reinterpret_cast<const char*>(data), size);
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return 0;
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  veil::Config c;
  if (c.LoadFile(path)) {
    (void)c.BuildPrivacy();
    (void)c.BuildDetector();
    (void)c.BuildEncoder();
    (void)c.BuildServer();
    (void)c.BuildWorker();
    (void)c.Dump();
  }
  // The same bytes as an environment value and as a flag's text, for a few keys of each type.
  const std::string value = text.substr(0, text.find('\0'));
  std::string env = "VEIL_SERVER__LISTEN=" + value;
  char* envp[] = {env.data(), nullptr};
  veil::Config e;
  (void)e.LoadEnv(envp);
  for (const char* key : {"server.max_sessions", "privacy.detect_size", "server.allowed_hosts", "mosaic.margin",
                          "inference.targets", "privacy.detect_every", "privacy.scene_cut"})
    (void)e.SetText(key, value, veil::Source::kFlag);
  (void)e.BuildServer();
  (void)e.BuildPrivacy();
  return 0;
}
