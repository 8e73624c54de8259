// libFuzzer target: raw bytes from an unauthenticated client on the control API's socket ->
// the HTTP server's framing (src/http: heads, chunked bodies, limits) -> the guard (Host,
// Origin, token) -> the routes and their JSON bodies -> a real SessionManager (sessions are
// created and deleted for real; the embedded detector, no media). After each input every
// session is deleted, and every 64 inputs /healthz must still answer. Everything is shut down
// at exit, so LeakSanitizer checks the whole server.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "../tests/raw_socket.h"
#include "server/ai_wiring.h"
#include "server/http_api.h"
#include "server/session_manager.h"

namespace {

struct Api {
  veil::MetricsRegistry metrics;
  std::unique_ptr<veil::SessionManager> sessions;
  std::unique_ptr<veil::HttpApi> http;
};

Api* g_api = nullptr;

Api* Start() {
  auto* a = new Api();
  veil::ServerDeps d;
  d.server.listen_port = 0;
  d.server.max_sessions = 2;
  d.server.max_viewers = 2;
  d.server.fault_injection = true;
  d.server.start_timeout_ms = 60000;
  d.server.http_request_timeout_ms = 200;  // an incomplete input costs 200 ms, not 10 s
  d.server.http_idle_timeout_ms = 200;
  auto parts = veil::StartServerParts(d, &a->metrics);
  if (!parts) {
    std::fprintf(stderr, "fuzz_api: %s\n", parts.error().c_str());
    std::abort();
  }
  auto s = veil::SessionManager::Start(d, &a->metrics, std::move(*parts));
  if (!s) {
    std::fprintf(stderr, "fuzz_api: %s\n", s.error().c_str());
    std::abort();
  }
  a->sessions = std::move(*s);
  auto h = veil::HttpApi::Start(a->sessions.get(), &a->metrics, d.server);
  if (!h) {
    std::fprintf(stderr, "fuzz_api: %s\n", h.error().c_str());
    std::abort();
  }
  a->http = std::move(*h);
  g_api = a;
  // libFuzzer ends with exit(): stop the server and its threads before static objects go.
  std::atexit([] {
    g_api->http->Stop();
    delete g_api;
  });
  return a;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Api* api = Start();
  static uint64_t runs = 0;
  const int fd = veil::test::Connect(api->http->port());
  if (fd < 0) std::abort();
  veil::test::Send(fd, std::string(reinterpret_cast<const char*>(data), size));
  shutdown(fd, SHUT_WR);  // end of input: the server sees EOF rather than waiting for a deadline
  veil::test::ReadAll(fd, 3000);
  close(fd);
  for (const veil::SessionInfo& s : api->sessions->List()) api->sessions->Delete(s.id, "fuzz");
  api->sessions->InjectFault(false, false, "fuzz");
  if (++runs % 64 == 0) {
    const int h = veil::test::Connect(api->http->port());
    veil::test::Send(h, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    const std::string r = veil::test::ReadAll(h, 3000);
    close(h);
    if (r.rfind("HTTP/1.1 200", 0) != 0) {
      std::fprintf(stderr, "fuzz_api: /healthz no longer answers: '%s'\n", r.c_str());
      std::abort();
    }
  }
  return 0;
}
