// The three HTTP server libraries Debian 12 offers, each serving GET /healthz
// with the settings it would have in veil, so scripts/http-abuse.py can compare
// them under the same abuse (scripts/http-compare.sh; docs/figures.md).
//
//   veil_http_servers beast|httplib|mhd PORT
//
// beast:   veil's control-plane server (src/http/server.h), default limits.
// httplib: cpp-httplib 0.11 as veil used it until 2026-11 (64 KiB bodies, 5 s read timeout).
// mhd:     libmicrohttpd 0.9.75, internal epoll thread(s), 4096 connections, 10 s timeout.
#include <httplib.h>
#include <microhttpd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "http/server.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;
const char kBody[] = "{\"status\": \"ok\"}\n";

MHD_Result MhdHandler(void*, MHD_Connection* c, const char* url, const char* method, const char*, const char*,
                      size_t* upload_size, void** state) {
  if (*state == nullptr) {  // first call: headers only
    static int marker;
    *state = &marker;
    return MHD_YES;
  }
  if (*upload_size != 0) {  // a body: refuse past 64 KiB like the others
    *upload_size = 0;
    return MHD_YES;
  }
  const bool ok = std::strcmp(method, "GET") == 0 && std::strcmp(url, "/healthz") == 0;
  MHD_Response* r = MHD_create_response_from_buffer(ok ? sizeof(kBody) - 1 : 0, const_cast<char*>(kBody),
                                                    MHD_RESPMEM_PERSISTENT);
  MHD_add_response_header(r, "Content-Type", "application/json");
  const MHD_Result ret = MHD_queue_response(c, ok ? 200 : 404, r);
  MHD_destroy_response(r);
  return ret;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s beast|httplib|mhd PORT\n", argv[0]);
    return 2;
  }
  const std::string lib = argv[1];
  const int port = std::atoi(argv[2]);
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  std::signal(SIGINT, [](int) { g_stop = 1; });
  veil::http::RaiseFileLimit(8192);
  auto wait = [] {
    while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  };
  if (lib == "beast") {
    veil::http::Router r;
    r.Get("/healthz", [](const veil::http::Request&, veil::http::Response& res) { res.SetContent(kBody, "application/json"); }, true);
    auto s = veil::http::Server::Start(&r, "127.0.0.1", port, veil::http::Limits{}, nullptr);
    if (!s) return std::fprintf(stderr, "%s\n", s.error().c_str()), 1;
    wait();
    (*s)->Stop();
  } else if (lib == "httplib") {
    httplib::Server s;
    s.set_payload_max_length(64 * 1024);
    s.set_read_timeout(5, 0);
    s.set_write_timeout(5, 0);
    s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content(kBody, "application/json"); });
    if (!s.bind_to_port("127.0.0.1", port)) return 1;
    std::thread t([&] { s.listen_after_bind(); });
    wait();
    s.stop();
    t.join();
  } else if (lib == "mhd") {
    MHD_Daemon* d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, uint16_t(port), nullptr, nullptr,
                                     &MhdHandler, nullptr, MHD_OPTION_CONNECTION_LIMIT, 4096u,
                                     MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                     size_t(64 * 1024), MHD_OPTION_END);
    if (!d) return 1;
    wait();
    MHD_stop_daemon(d);
  } else {
    return 2;
  }
  return 0;
}
