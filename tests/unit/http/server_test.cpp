// The control plane's HTTP server (src/http): framing, limits, deadlines and
// the handler pool, driven with raw sockets so every byte is the test's.
#include "http/server.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "raw_socket.h"

namespace veil::http {
namespace {

using namespace veil::test;  // NOLINT: Connect, Send, ReadAll, ReadResponse
using Clock = std::chrono::steady_clock;

std::string Get(const std::string& path) { return "GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n"; }

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(Limits lim) {
    router_.Get("/healthz", [](const Request&, Response& r) { r.SetContent("ok", "text/plain"); }, true);
    router_.Get("/echo", [](const Request& q, Response& r) {
      r.SetContent(q.Param("a") + "|" + q.Header("x-test") + "|" + q.remote_addr, "text/plain");
    });
    router_.Post("/body", [](const Request& q, Response& r) { r.SetContent(std::to_string(q.body.size()), "text/plain"); });
    router_.Get("/throw", [](const Request&, Response&) -> void { throw std::runtime_error("boom"); });
    router_.Get("/block", [this](const Request&, Response& r) {
      std::unique_lock lk(mu_);
      ++blocked_;
      cv_.notify_all();
      cv_.wait(lk, [this] { return release_; });
      r.SetContent("released", "text/plain");
    });
    router_.Get("/bad-header", [](const Request&, Response& r) { r.SetHeader("X-Split", "a\r\nSet-Cookie: x=1"); });
    router_.SetErrorBody([](const Request&, Response& r, const std::string& detail) {
      r.SetContent("error " + std::to_string(r.status) + " " + detail, "text/plain");
    });
    auto s = Server::Start(&router_, "127.0.0.1", 0, lim, &metrics_);
    ASSERT_TRUE(s.ok()) << s.error();
    server_ = std::move(*s);
  }
  void TearDown() override {
    {
      std::lock_guard lk(mu_);
      release_ = true;
    }
    cv_.notify_all();
    if (server_) server_->Stop();
  }
  double Count(const std::string& name, const Labels& labels = {}) {
    return metrics_.GetCounter(name, "", labels).value();
  }
  int port() const { return server_->port(); }

  Router router_;
  MetricsRegistry metrics_;
  std::unique_ptr<Server> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  int blocked_ = 0;
  bool release_ = false;
};

TEST_F(HttpServerTest, AnswersRoutesKeepsAliveAndPipelines) {
  StartServer({});
  const int fd = Connect(port());
  ASSERT_GE(fd, 0);
  // Two requests in one write: both answered, in order, on the same connection.
  Send(fd, "GET /echo?a=x%20y+z HTTP/1.1\r\nHost: t\r\nX-Test: hi\r\n\r\n" + Get("/healthz"));
  const std::string both = ReadAll(fd, 500);  // both answers (possibly in one read)
  const size_t first = both.find("x y z|hi|127.0.0.1"), second = both.find("\r\n\r\nok");
  EXPECT_EQ(both.rfind("HTTP/1.1 200 OK", 0), 0u) << both;
  EXPECT_NE(first, std::string::npos) << both;
  EXPECT_NE(second, std::string::npos) << both;
  EXPECT_LT(first, second) << both;
  // HEAD: GET's headers, no body; the connection goes on.
  Send(fd, "HEAD /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
  const std::string r3 = ReadAll(fd, 300);
  EXPECT_NE(r3.find("Content-Length: 2\r\n"), std::string::npos) << r3;
  EXPECT_EQ(r3.size(), r3.find("\r\n\r\n") + 4) << r3;
  Send(fd, Get("/nothing"));
  const std::string r4 = ReadResponse(fd);
  EXPECT_NE(r4.find("HTTP/1.1 404"), std::string::npos) << r4;
  Send(fd, "DELETE /echo HTTP/1.1\r\nHost: t\r\n\r\n");
  const std::string r5 = ReadResponse(fd);
  EXPECT_NE(r5.find("HTTP/1.1 405"), std::string::npos) << r5;
  EXPECT_NE(r5.find("Allow: GET"), std::string::npos) << r5;
  close(fd);
}

TEST_F(HttpServerTest, HandlerExceptionsAndUnsafeHeadersNeverReachTheWire) {
  StartServer({});
  const int fd = Connect(port());
  Send(fd, Get("/throw"));
  const std::string r = ReadResponse(fd);
  EXPECT_NE(r.find("HTTP/1.1 500"), std::string::npos) << r;
  EXPECT_NE(r.find("error 500 boom"), std::string::npos) << r;
  Send(fd, Get("/bad-header"));
  const std::string r2 = ReadResponse(fd);
  EXPECT_NE(r2.find("HTTP/1.1 200"), std::string::npos) << r2;
  EXPECT_EQ(r2.find("Set-Cookie"), std::string::npos) << r2;  // no response splitting
  close(fd);
}

TEST_F(HttpServerTest, BodiesPastTheLimitAre413ChunkedOrNot) {
  Limits lim;
  lim.max_body_bytes = 1000;
  StartServer(lim);
  {
    const int fd = Connect(port());
    Send(fd, "POST /body HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n" + std::string(1000, 'a'));
    EXPECT_NE(ReadResponse(fd).find("\r\n\r\n1000"), std::string::npos);
    close(fd);
  }
  {
    const int fd = Connect(port());  // declared too large: refused before the body is read
    Send(fd, "POST /body HTTP/1.1\r\nHost: t\r\nContent-Length: 1001\r\n\r\n");
    bool closed = false;
    const std::string r = ReadAll(fd, 3000, &closed);
    EXPECT_NE(r.find("HTTP/1.1 413"), std::string::npos) << r;
    EXPECT_TRUE(closed);
    close(fd);
  }
  {
    const int fd = Connect(port());  // chunked: no length up front; refused once the chunks pass the limit
    Send(fd, "POST /body HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (int i = 0; i < 5; ++i) Send(fd, "100\r\n" + std::string(256, 'b') + "\r\n");
    bool closed = false;
    const std::string r = ReadAll(fd, 3000, &closed);
    EXPECT_NE(r.find("HTTP/1.1 413"), std::string::npos) << r;
    EXPECT_TRUE(closed);
    close(fd);
  }
  {
    const int fd = Connect(port());  // chunked within the limit is fine
    Send(fd, "POST /body HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n");
    EXPECT_NE(ReadResponse(fd).find("\r\n\r\n16"), std::string::npos);
    close(fd);
  }
  {
    const int fd = Connect(port());  // curl's Expect: 100-continue
    Send(fd, "POST /body HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
    EXPECT_NE(ReadAll(fd, 500).find("HTTP/1.1 100 Continue"), std::string::npos);
    Send(fd, "abc");
    EXPECT_NE(ReadResponse(fd).find("\r\n\r\n3"), std::string::npos);
    close(fd);
  }
  EXPECT_EQ(Count("veil_http_rejected_total", {{"reason", "body_too_large"}}), 2);
}

TEST_F(HttpServerTest, HeadsPastTheLimitAre431AndGarbageIs400) {
  Limits lim;
  lim.max_header_bytes = 2048;
  StartServer(lim);
  int fd = Connect(port());
  Send(fd, "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(4000, 'x') + "\r\n\r\n");
  std::string r = ReadAll(fd, 3000);
  EXPECT_NE(r.find("HTTP/1.1 431"), std::string::npos) << r;
  close(fd);
  fd = Connect(port());
  Send(fd, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http\r\n\r\n");  // a TLS hello, say
  r = ReadAll(fd, 3000);
  EXPECT_NE(r.find("HTTP/1.1 400"), std::string::npos) << r;
  close(fd);
}

TEST_F(HttpServerTest, SlowAndSilentClientsAreCutOffAtTheirDeadlines) {
  Limits lim;
  lim.idle_timeout_ms = 600;
  lim.header_timeout_ms = 800;
  lim.body_timeout_ms = 800;
  StartServer(lim);
  const auto t0 = Clock::now();
  const int silent = Connect(port());
  const int slow_head = Connect(port());
  const int slow_body = Connect(port());
  Send(slow_body, "POST /body HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc");
  // A byte every 200 ms keeps no connection alive past its phase's deadline (slowloris).
  bool closed_silent = false, closed_head = false, closed_body = false;
  for (int i = 0; i < 25 && !(closed_silent && closed_head && closed_body); ++i) {
    Send(slow_head, i == 0 ? "GET /healthz HTTP/1.1\r\n" : "X");
    Send(slow_body, "d");
    if (!closed_silent) ReadAll(silent, 1, &closed_silent);
    if (!closed_head) ReadAll(slow_head, 1, &closed_head);
    if (!closed_body) ReadAll(slow_body, 1, &closed_body);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_TRUE(closed_silent && closed_head && closed_body) << s << " silent " << closed_silent << " head " << closed_head << " body " << closed_body;
  EXPECT_LT(s, 4.0);  // the loop gives up at 5 s
  EXPECT_EQ(Count("veil_http_timeouts_total", {{"phase", "idle"}}), 1);
  EXPECT_EQ(Count("veil_http_timeouts_total", {{"phase", "header"}}), 1);
  EXPECT_EQ(Count("veil_http_timeouts_total", {{"phase", "body"}}), 1);
  for (int fd : {silent, slow_head, slow_body}) close(fd);
}

TEST_F(HttpServerTest, PastTheConnectionCapNewConnectionsAreClosedAndTheRestServed) {
  Limits lim;
  lim.max_connections = 20;
  StartServer(lim);
  std::vector<int> held;
  for (int i = 0; i < 20; ++i) held.push_back(Connect(port()));
  // Let the server accept them all before the one past the cap arrives.
  for (int i = 0; i < 100 && server_->open_connections() < 20; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(server_->open_connections(), 20);
  const int extra = Connect(port());
  bool closed = false;
  ReadAll(extra, 2000, &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(Count("veil_http_connections_refused_total"), 1);
  close(extra);
  // A held connection still gets answers; once one leaves, a new one is served.
  Send(held[0], Get("/healthz"));
  EXPECT_NE(ReadResponse(held[0]).find("200 OK"), std::string::npos);
  close(held[1]);
  for (int i = 0; i < 100 && server_->open_connections() > 19; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const int next = Connect(port());
  Send(next, Get("/healthz"));
  EXPECT_NE(ReadResponse(next).find("200 OK"), std::string::npos);
  close(next);
  for (size_t i = 0; i < held.size(); ++i)
    if (i != 1) close(held[i]);
}

TEST_F(HttpServerTest, BusyHandlersNeitherDelayInlineRoutesNorQueueWithoutBound) {
  Limits lim;
  lim.threads = 2;
  lim.max_queued = 2;
  StartServer(lim);
  std::vector<int> fds;
  auto send_block = [&] {
    fds.push_back(Connect(port()));
    Send(fds.back(), Get("/block"));
  };
  send_block();
  send_block();
  {
    std::unique_lock lk(mu_);  // both handler threads are taken
    ASSERT_TRUE(cv_.wait_for(lk, std::chrono::seconds(3), [this] { return blocked_ == 2; }));
  }
  send_block();
  send_block();
  Gauge& waiting = metrics_.GetGauge("veil_http_requests_waiting", "");
  for (int i = 0; i < 300 && waiting.value() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(waiting.value(), 2);
  const int over = Connect(port());  // the queue is full: 503 at once
  Send(over, Get("/echo"));
  const std::string r = ReadResponse(over);
  EXPECT_NE(r.find("HTTP/1.1 503"), std::string::npos) << r << " blocked " << blocked_ << " open " << server_->open_connections() << " requests " << Count("veil_http_requests_total");
  EXPECT_NE(r.find("Retry-After: 1"), std::string::npos) << r;
  close(over);
  const int health = Connect(port());  // answered on the I/O thread, ahead of the queue
  Send(health, Get("/healthz"));
  EXPECT_NE(ReadResponse(health, 1000).find("200 OK"), std::string::npos);
  close(health);
  {
    std::lock_guard lk(mu_);
    release_ = true;
  }
  cv_.notify_all();
  for (int fd : fds) {
    EXPECT_NE(ReadResponse(fd).find("released"), std::string::npos);
    close(fd);
  }
}

// The guard may add to a request's params for its handler (the cluster marks a request it
// placed here), and the after-hook sees every request once answered, whoever answered it.
TEST(Router, TheGuardMayMarkARequestAndTheAfterHookSeesEveryAnswer) {
  Router r;
  r.SetGuard([](Request& q, Response& res) {
    if (q.path == "/refused") {
      res.status = 403;
      return true;
    }
    q.params.emplace_back("mark", "guard");
    return false;
  });
  r.Get("/ok", [](const Request& q, Response& res) { res.SetContent(q.Param("mark"), "text/plain"); });
  r.Get("/throw", [](const Request&, Response&) -> void { throw std::runtime_error("boom"); });
  std::vector<std::pair<std::string, int>> seen;
  r.SetAfter([&](const Request& q, const Response& res) { seen.emplace_back(q.path + ":" + q.Param("mark"), res.status); });
  for (const char* path : {"/ok", "/refused", "/throw", "/missing"}) {
    Request q;
    q.method = "GET";
    q.path = q.target = path;
    Response res;
    r.Handle(q, res);
    if (q.path == "/ok") {
      EXPECT_EQ(res.body, "guard");
    }
  }
  const std::vector<std::pair<std::string, int>> want = {
      {"/ok:guard", 200}, {"/refused:", 403}, {"/throw:guard", 500}, {"/missing:guard", 404}};
  EXPECT_EQ(seen, want);
}

}  // namespace
}  // namespace veil::http
