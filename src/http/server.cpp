#include "http/server.h"

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include "core/thread_cpu.h"

namespace veil::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = boost::asio::ip::tcp;

std::chrono::milliseconds Ms(double ms) { return std::chrono::milliseconds(int64_t(ms)); }

bool SafeField(const std::string& s) {
  for (char c : s)
    if (c == '\r' || c == '\n' || c == '\0') return false;
  return true;
}

Response ErrorResponse(int status, const std::string& why) {
  Response r;
  r.status = status;
  r.SetContent("{\n  \"error\": \"" + why + "\"\n}\n", "application/json");
  return r;
}

}  // namespace

struct Server::Impl {
  const Router* router = nullptr;
  Limits lim;
  // Counters first: connections still queued in the io_context at destruction use them.
  std::atomic<int> open{0}, queued{0};
  std::atomic<bool> stopped{false};
  Gauge* open_gauge = nullptr;
  Gauge* waiting_gauge = nullptr;
  Counter* refused = nullptr;
  Counter *t_idle = nullptr, *t_header = nullptr, *t_body = nullptr, *t_write = nullptr;
  Counter *r_header = nullptr, *r_body = nullptr, *r_malformed = nullptr, *r_overloaded = nullptr;
  Counter* requests = nullptr;
  int port = 0;
  net::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  net::steady_timer accept_retry{ioc};
  std::unique_ptr<net::thread_pool> pool;
  std::thread io_thread;

  void Accept();
  void Run();
};

namespace {

class Conn : public std::enable_shared_from_this<Conn> {
 public:
  Conn(Server::Impl* s, tcp::socket sock) : s_(s), stream_(std::move(sock)) {
    boost::system::error_code ec;
    const tcp::endpoint ep = stream_.socket().remote_endpoint(ec);
    if (!ec) {
      addr_ = ep.address().to_string();
      port_ = ep.port();
    }
    stream_.socket().set_option(tcp::no_delay(true), ec);
    ++s_->open;
    if (s_->open_gauge) s_->open_gauge->Add(1);
  }
  ~Conn() {
    --s_->open;
    if (s_->open_gauge) s_->open_gauge->Add(-1);
  }

  void Start() { WaitForRequest(); }

 private:
  static void Inc(Counter* c) {
    if (c) c->Inc();
  }

  // Phase 1: the first byte of a request, under the idle deadline.
  void WaitForRequest() {
    if (buf_.size() > 0) return ReadHead();  // pipelined: already here
    stream_.expires_after(Ms(first_ ? std::min(s_->lim.idle_timeout_ms, s_->lim.header_timeout_ms) : s_->lim.idle_timeout_ms));
    stream_.async_read_some(buf_.prepare(4096), [self = shared_from_this()](beast::error_code ec, size_t n) {
      if (ec) {
        if (ec == beast::error::timeout) Inc(self->s_->t_idle);
        return self->Close();
      }
      self->buf_.commit(n);
      self->ReadHead();
    });
  }

  // Phase 2: the rest of the head, under the header deadline, bounded in size.
  void ReadHead() {
    first_ = false;
    parser_.emplace();
    parser_->header_limit(uint32_t(s_->lim.max_header_bytes));
    parser_->body_limit(uint64_t(s_->lim.max_body_bytes));
    stream_.expires_after(Ms(s_->lim.header_timeout_ms));
    bhttp::async_read_header(stream_, buf_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      self->OnHead(ec);
    });
  }

  void OnHead(beast::error_code ec) {
    if (ec) return Fail(ec, s_->t_header);
    const auto& msg = parser_->get();
    if (auto cl = parser_->content_length(); cl && *cl > s_->lim.max_body_bytes) return Fail(bhttp::error::body_limit, nullptr);
    const auto expect = msg[bhttp::field::expect];
    if (!expect.empty()) {
      if (!beast::iequals(expect, "100-continue"))
        return Reject(417, "only 'Expect: 100-continue' is understood", nullptr);
      if (!parser_->is_done()) {
        static const std::string k100 = "HTTP/1.1 100 Continue\r\n\r\n";
        stream_.expires_after(Ms(s_->lim.write_timeout_ms));
        return net::async_write(stream_, net::buffer(k100), [self = shared_from_this()](beast::error_code ec, size_t) {
          if (ec) return self->Close();
          self->ReadBody();
        });
      }
    }
    ReadBody();
  }

  // Phase 3: the body (Content-Length or chunked), under the body deadline and size limit.
  void ReadBody() {
    if (parser_->is_done()) return Dispatch();
    stream_.expires_after(Ms(s_->lim.body_timeout_ms));
    bhttp::async_read(stream_, buf_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->Fail(ec, self->s_->t_body);
      self->Dispatch();
    });
  }

  void Fail(beast::error_code ec, Counter* timeout_counter) {
    if (ec == beast::error::timeout) {
      Inc(timeout_counter);
      return Close();  // a client this slow does not get to hold a write either
    }
    if (ec == bhttp::error::header_limit)
      return Reject(431, "request head too large (" + std::to_string(s_->lim.max_header_bytes / 1024) + " KiB at most)", s_->r_header);
    if (ec == bhttp::error::body_limit)
      return Reject(413, "body too large (" + std::to_string(s_->lim.max_body_bytes / 1024) + " KiB at most)", s_->r_body);
    if (ec == bhttp::error::end_of_stream || ec == net::error::eof || ec == net::error::connection_reset ||
        ec == net::error::operation_aborted)
      return Close();
    Reject(400, "malformed HTTP request", s_->r_malformed);
  }

  // Answers and closes: after a framing error the stream cannot be trusted.
  void Reject(int status, const std::string& why, Counter* c) {
    Inc(c);
    keep_alive_ = false;
    head_ = false;
    Write(ErrorResponse(status, why));
  }

  void Dispatch() {
    Inc(s_->requests);
    auto& msg = parser_->get();
    Request req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    const size_t q = req.target.find('?');
    req.path = req.target.substr(0, q);
    if (q != std::string::npos) req.params = ParseQuery(std::string_view(req.target).substr(q + 1));
    for (const auto& f : msg) req.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    req.body = std::move(msg.body());
    req.remote_addr = addr_;
    req.remote_port = port_;
    keep_alive_ = msg.keep_alive();
    head_ = msg.method() == bhttp::verb::head;
    parser_.reset();
    if (s_->router->IsInline(req)) {
      Response res;
      s_->router->Handle(req, res);
      return Write(std::move(res));
    }
    if (s_->queued.load() >= s_->lim.max_queued) {
      Inc(s_->r_overloaded);
      Response r = ErrorResponse(503, "the server is busy: too many requests waiting");
      r.SetHeader("Retry-After", "1");
      return Write(std::move(r));
    }
    ++s_->queued;
    if (s_->waiting_gauge) s_->waiting_gauge->Add(1);
    net::post(*s_->pool, [self = shared_from_this(), req = std::move(req)]() mutable {
      --self->s_->queued;
      if (self->s_->waiting_gauge) self->s_->waiting_gauge->Add(-1);
      Response res;
      self->s_->router->Handle(req, res);
      net::post(self->s_->ioc, [self, res = std::move(res)]() mutable { self->Write(std::move(res)); });
    });
  }

  void Write(Response r) {
    auto out = std::make_shared<bhttp::response<bhttp::string_body>>();
    out->version(11);
    out->result(unsigned(r.status));
    if (out->reason().empty()) out->reason(ReasonPhrase(r.status));
    for (auto& [k, v] : r.headers) {
      if (k.empty() || !SafeField(k) || !SafeField(v)) {
        spdlog::warn("HTTP: header '{}' dropped (CR, LF or NUL)", k);
        continue;
      }
      out->insert(k, v);
    }
    out->body() = std::move(r.body);
    out->keep_alive(keep_alive_ && !s_->stopped.load());
    out->prepare_payload();
    if (head_) out->body().clear();  // Content-Length stays: what GET would send
    stream_.expires_after(Ms(s_->lim.write_timeout_ms));
    bhttp::async_write(stream_, *out, [self = shared_from_this(), out](beast::error_code ec, size_t) {
      if (ec) {
        if (ec == beast::error::timeout) Inc(self->s_->t_write);
        return self->Close();
      }
      if (!out->keep_alive()) return self->Close();
      self->WaitForRequest();
    });
  }

  void Close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }

  Server::Impl* s_;
  beast::tcp_stream stream_;
  beast::flat_buffer buf_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::string addr_;
  int port_ = 0;
  bool first_ = true, keep_alive_ = true, head_ = false;
};

}  // namespace

void Server::Impl::Accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket sock) {
    if (stopped.load()) return;
    if (ec) {
      // Out of descriptors (EMFILE) leaves the connection queued: retry later rather than spin.
      spdlog::warn("HTTP accept: {}", ec.message());
      accept_retry.expires_after(std::chrono::milliseconds(50));
      accept_retry.async_wait([this](beast::error_code) {
        if (!stopped.load()) Accept();
      });
      return;
    }
    if (open.load() >= lim.max_connections) {
      if (refused) refused->Inc();
      beast::error_code ignored;
      sock.close(ignored);
    } else {
      std::make_shared<Conn>(this, std::move(sock))->Start();
    }
    Accept();
  });
}

void Server::Impl::Run() {
  for (;;) {
    try {
      ioc.run();
      return;
    } catch (const std::exception& e) {
      spdlog::error("HTTP I/O thread: {}", e.what());
    }
  }
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Server>> Server::Start(const Router* router, const std::string& host, int port,
                                              const Limits& limits, MetricsRegistry* metrics) {
  auto impl = std::make_unique<Impl>();
  impl->router = router;
  impl->lim = limits;
  if (metrics) {
    impl->open_gauge = &metrics->GetGauge("veil_http_connections", "HTTP connections open now");
    impl->waiting_gauge = &metrics->GetGauge("veil_http_requests_waiting",
                                             "HTTP requests waiting for a handler thread (server.http_threads)");
    impl->refused = &metrics->GetCounter("veil_http_connections_refused_total",
                                         "HTTP connections closed on arrival: the connection cap was reached");
    const char* th = "HTTP connections closed for missing a deadline, by phase (idle: no request; header, body; write)";
    impl->t_idle = &metrics->GetCounter("veil_http_timeouts_total", th, {{"phase", "idle"}});
    impl->t_header = &metrics->GetCounter("veil_http_timeouts_total", th, {{"phase", "header"}});
    impl->t_body = &metrics->GetCounter("veil_http_timeouts_total", th, {{"phase", "body"}});
    impl->t_write = &metrics->GetCounter("veil_http_timeouts_total", th, {{"phase", "write"}});
    const char* rh = "HTTP requests refused before routing, by reason";
    impl->r_header = &metrics->GetCounter("veil_http_rejected_total", rh, {{"reason", "header_too_large"}});
    impl->r_body = &metrics->GetCounter("veil_http_rejected_total", rh, {{"reason", "body_too_large"}});
    impl->r_malformed = &metrics->GetCounter("veil_http_rejected_total", rh, {{"reason", "malformed"}});
    impl->r_overloaded = &metrics->GetCounter("veil_http_rejected_total", rh, {{"reason", "overloaded"}});
    impl->requests = &metrics->GetCounter("veil_http_requests_total", "HTTP requests read whole and routed");
  }
  const std::string where = host + ":" + std::to_string(port);
  beast::error_code ec;
  tcp::resolver resolver(impl->ioc);
  auto found = resolver.resolve(host, std::to_string(port), tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || found.empty()) return Status::Error("cannot listen on " + where + " (" + (ec ? ec.message() : "no address") + ")");
  const tcp::endpoint ep = found.begin()->endpoint();
  impl->acceptor.open(ep.protocol(), ec);
  if (!ec) impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(ep, ec);
  if (!ec) impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    return Status::Error("cannot listen on " + where + " (" + ec.message() + "; in use, or not an address of this machine)");
  impl->port = impl->acceptor.local_endpoint(ec).port();
  {
    const ThreadNameScope named("http");  // the pool's threads start with this name
    impl->pool = std::make_unique<net::thread_pool>(size_t(std::max(1, limits.threads)));
  }
  Impl* p = impl.get();
  p->Accept();
  p->io_thread = std::thread([p] {
    NameThisThread("http-io");
    p->Run();
  });
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::~Server() { Stop(); }

int Server::port() const { return impl_->port; }
int Server::open_connections() const { return impl_->open.load(); }

void Server::Stop() {
  if (impl_->stopped.exchange(true)) return;
  impl_->ioc.stop();
  if (impl_->io_thread.joinable()) impl_->io_thread.join();
  beast::error_code ec;
  impl_->acceptor.close(ec);
  impl_->accept_retry.cancel();
  impl_->pool->join();  // handlers in flight finish; their answers are dropped with the connections
}

long RaiseFileLimit(long wanted) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return -1;
  if (rl.rlim_cur != RLIM_INFINITY && rlim_t(wanted) > rl.rlim_cur) {
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? rlim_t(wanted) : std::min(rlim_t(wanted), rl.rlim_max);
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur == RLIM_INFINITY ? wanted : long(rl.rlim_cur);
}

}  // namespace veil::http
