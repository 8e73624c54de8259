// Three real `veil serve` nodes on distinct loopback addresses and a real redis-server
// (issue 15): placement through one entry node by free sessions, a burst that lands where
// there is room, redirects to the node holding a session, drain on SIGTERM, a node killed
// with SIGKILL, and Redis stopped and restarted. The first test's sessions carry no media
// (placement, the directory and drain are about the control plane); the second drives media
// through the entry URL: `veil load`'s runner, and a session placed by 307 judged against the
// clip's ground truth.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "cluster/registry.h"
#include "core/clock.h"
#include "core/metrics.h"
#include "load/load_runner.h"
#include "server_harness.h"

namespace veil::test {
namespace {

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// redis-server on 127.0.0.1:port, no persistence.
class RedisProcess {
 public:
  explicit RedisProcess(int port) : port_(port) { Start(); }
  ~RedisProcess() { Stop(); }
  void Start() {
    std::fflush(stdout);  // the child must not write our buffered output again
    pid_ = fork();
    if (pid_ == 0) {
      freopen("/dev/null", "w", stdout);
      const std::string p = std::to_string(port_);
      execlp("redis-server", "redis-server", "--port", p.c_str(), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--protected-mode", "no", static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 100 && Cli("PING").find("PONG") == std::string::npos; ++i) usleep(50000);
  }
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  std::string Cli(const std::string& args) const {
    return RunShell("redis-cli -h 127.0.0.1 -p " + std::to_string(port_) + " " + args).out;
  }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

 private:
  int port_;
  pid_t pid_ = -1;
};

struct Hop {
  int status = 0;
  std::string location, text;
  json body;
};

// One request to an absolute URL, redirects not followed.
Hop Send(const std::string& method, const std::string& url, const std::string& body = "",
         const std::string& type = "application/json") {
  static const std::regex re(R"(^http://([0-9.]+):([0-9]+)(/.*)$)");
  std::smatch m;
  Hop h;
  if (!std::regex_match(url, m, re)) return h;
  httplib::Client c(m[1].str(), std::stoi(m[2].str()));
  c.set_read_timeout(15, 0);
  httplib::Result r(nullptr, httplib::Error::Unknown);
  if (method == "GET") r = c.Get(m[3].str());
  else if (method == "POST") r = c.Post(m[3].str(), body, type);
  else if (method == "DELETE") r = c.Delete(m[3].str());
  if (!r) return h;
  h.status = r->status;
  h.location = r->get_header_value("Location");
  h.text = r->body;
  h.body = json::parse(r->body, nullptr, false);
  return h;
}

// Follows 307s like a WHIP client must (RFC 9725 4.5), at most 3.
Hop Follow(const std::string& method, std::string url, const std::string& body = "", int* hops = nullptr) {
  Hop h;
  for (int i = 0; i < 4; ++i) {
    h = Send(method, url, body);
    if (h.status != 307) return h;
    if (hops) ++*hops;
    url = h.location;
  }
  return h;
}

struct Node {
  std::string id;
  std::unique_ptr<ServerProcess> p;
  std::string url() const { return p->url(); }
  std::set<std::string> Local() {
    std::set<std::string> ids;
    const Reply r = p->Call("GET", "/v1/sessions");
    if (r.status != 200) ADD_FAILURE() << id << ": GET /v1/sessions " << r.status << " " << r.text;
    for (const json& s : r.body["sessions"])
      if (!s.value("remote", false)) ids.insert(s["id"].get<std::string>());
    return ids;
  }
};

Node StartNode(const RedisProcess& redis, const std::string& id, const std::string& ip, int max_sessions,
               const std::vector<std::string>& extra = {}) {
  Node n;
  n.id = id;
  std::vector<std::string> args = {"--rtp-address", ip, "--ice-address", ip, "--redis", redis.url(), "--node-id", id,
                                   "--max-sessions", std::to_string(max_sessions), "--start-timeout-ms", "120000"};
  args.insert(args.end(), extra.begin(), extra.end());
  n.p = std::make_unique<ServerProcess>(args, ip + ":0");
  return n;
}

// A veil child process (veil publish), stopped with SIGINT.
class Publisher {
 public:
  explicit Publisher(const std::vector<std::string>& args) {
    std::fflush(stdout);
    pid_ = fork();
    if (pid_ == 0) {
      const int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
      std::vector<std::string> all = {VEIL_BIN};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(VEIL_BIN, argv.data());
      _exit(127);
    }
  }
  ~Publisher() {
    if (pid_ <= 0) return;
    kill(pid_, SIGINT);
    waitpid(pid_, nullptr, 0);
  }

 private:
  pid_t pid_ = -1;
};

TEST(Cluster, ThreeNodesOneEntryUrl) {
  const int redis_port = FreePort();
  RedisProcess redis(redis_port);
  ASSERT_NE(redis.Cli("PING").find("PONG"), std::string::npos) << "redis-server did not start";
  // Capacity 3 each (fixed: these sessions have no media for the model to learn from).
  Node n1 = StartNode(redis, "node-1", "127.0.0.11", 3);
  Node n2 = StartNode(redis, "node-2", "127.0.0.12", 3, {"--drain-timeout-s", "30"});
  Node n3 = StartNode(redis, "node-3", "127.0.0.13", 3);
  for (Node* n : {&n1, &n2, &n3}) ASSERT_TRUE(n->p->ok()) << n->p->log();
  EXPECT_NE(n1.url().find("127.0.0.11"), std::string::npos);
  SleepMs(1200);  // every node has seen the others' first heartbeat
  std::map<std::string, Node*> by_id = {{"node-1", &n1}, {"node-2", &n2}, {"node-3", &n3}};
  const json ready = n1.p->Call("GET", "/readyz").body;
  EXPECT_EQ(ready["cluster"]["node"], "node-1");
  EXPECT_EQ(ready["cluster"]["state"], "ok");

  // --- Placement under a burst: 12 offers at once through node 1 fill the 9 slots, 3 are refused.
  std::vector<std::future<Hop>> burst;
  for (int i = 0; i < 12; ++i)
    burst.push_back(std::async(std::launch::async, [&, i] {
      return Follow("POST", n1.url() + "/v1/sessions", json{{"id", "b" + std::to_string(i)}}.dump());
    }));
  int created = 0, refused = 0;
  for (auto& f : burst) {
    const Hop h = f.get();
    if (h.status == 201) ++created;
    else if (h.status == 503) ++refused;
    else ADD_FAILURE() << h.status << " " << h.text;
  }
  std::printf("burst of 12 through node 1: %d created, %d refused; per node %zu/%zu/%zu\n", created, refused,
              n1.Local().size(), n2.Local().size(), n3.Local().size());
  EXPECT_EQ(created, 9) << "every slot of the three nodes used";
  EXPECT_EQ(refused, 3);
  for (Node* n : {&n1, &n2, &n3}) EXPECT_EQ(n->Local().size(), 3u) << n->id;
  // Every request was answered, so each node takes its reservations back with its next beat
  // (asked for at once), long before they would expire (3 s).
  const double answered_t0 = NowMs();
  double taken_back_ms = -1;
  while (NowMs() - answered_t0 < 1500 && taken_back_ms < 0) {
    int left = 0;
    for (const char* id : {"node-1", "node-2", "node-3"})
      left += std::atoi(redis.Cli(std::string("ZCARD veil:reservations:") + id).c_str());
    if (left == 0) taken_back_ms = NowMs() - answered_t0;
    else SleepMs(20);
  }
  std::printf("the burst's reservations taken back %.0f ms after the last answer\n", taken_back_ms);
  EXPECT_GE(taken_back_ms, 0);
  for (Node* n : {&n1, &n2, &n3})
    for (const std::string& id : n->Local()) EXPECT_EQ(n->p->Call("DELETE", "/v1/sessions/" + id).status, 204);
  SleepMs(1200);

  // --- Spread: one at a time through node 1, they go where the most slots are free.
  std::map<std::string, std::string> where;  // session -> node
  for (int i = 0; i < 6; ++i) {
    int hops = 0;
    const Hop h = Follow("POST", n1.url() + "/v1/sessions", json{{"id", "s" + std::to_string(i)}}.dump(), &hops);
    ASSERT_EQ(h.status, 201) << h.text;
    EXPECT_LE(hops, 1) << "one redirect at most";
  }
  for (Node* n : {&n1, &n2, &n3}) {
    EXPECT_EQ(n->Local().size(), 2u) << n->id << " holds " << n->Local().size();
    for (const std::string& id : n->Local()) where[id] = n->id;
  }
  ASSERT_EQ(where.size(), 6u);

  // --- Any node answers for a session held elsewhere: 307 to the holder, whose Location is its own.
  std::string on3;
  for (const auto& [s, n] : where)
    if (n == "node-3") on3 = s;
  ASSERT_FALSE(on3.empty());
  Hop h = Send("GET", n1.url() + "/v1/sessions/" + on3);
  EXPECT_EQ(h.status, 307);
  EXPECT_EQ(h.location, n3.url() + "/v1/sessions/" + on3);
  EXPECT_EQ(Follow("GET", n1.url() + "/v1/sessions/" + on3).status, 200);
  h = Send("POST", n2.url() + "/whep/" + on3, "v=0\r\n", "application/sdp");
  EXPECT_EQ(h.status, 307) << h.text;
  EXPECT_EQ(h.location, n3.url() + "/whep/" + on3);
  // A named session that exists elsewhere is not created twice: the holder answers 409.
  h = Send("POST", n1.url() + "/v1/sessions", json{{"id", on3}}.dump());
  EXPECT_EQ(h.status, 307);
  EXPECT_EQ(Follow("POST", n1.url() + "/v1/sessions", json{{"id", on3}}.dump()).status, 409);
  h = Send("GET", n1.url() + "/watch?session=" + on3);
  EXPECT_EQ(h.status, 307);
  EXPECT_EQ(h.location, n3.url() + "/watch?session=" + on3);
  // The whole cluster from any node, each session with its node.
  std::map<std::string, std::string> listed;
  const Reply all = n2.p->Call("GET", "/v1/sessions");
  ASSERT_EQ(all.status, 200) << all.text;
  for (const json& s : all.body["sessions"])
    listed[s["id"].get<std::string>()] = s["node"].get<std::string>();
  EXPECT_EQ(listed, where);

  // --- Drain: SIGTERM node 2. It takes no new session, its sessions run on until they end.
  kill(n2.p->pid(), SIGTERM);
  SleepMs(700);
  EXPECT_TRUE(n2.p->alive());
  const Reply r2 = n2.p->Call("GET", "/readyz");
  EXPECT_EQ(r2.status, 503);
  EXPECT_NE(r2.body.value("reason", "").find("draining"), std::string::npos) << r2.text;
  EXPECT_EQ(n2.Local().size(), 2u) << "running sessions go on";
  for (int i = 0; i < 2; ++i) {
    const Hop c = Follow("POST", n2.url() + "/v1/sessions", json{{"id", "d" + std::to_string(i)}}.dump());
    ASSERT_EQ(c.status, 201) << c.text;
  }
  EXPECT_EQ(n2.Local().size(), 2u) << "nothing new on the draining node";
  EXPECT_EQ(n1.Local().size() + n3.Local().size(), 6u) << "d0 and d1 went to nodes 1 and 3";
  const double drain_t0 = NowMs();
  for (const std::string& id : n2.Local()) EXPECT_EQ(n2.p->Call("DELETE", "/v1/sessions/" + id).status, 204);
  EXPECT_EQ(n2.p->Stop(0 /* just wait */, 10000), 0) << n2.p->log();
  std::printf("node 2 exited %.0f ms after its last session ended\n", NowMs() - drain_t0);
  EXPECT_NE(n2.p->log().find("drained"), std::string::npos);

  // --- Node loss. A publisher with --retry (through node 1, which is full) lands on node 3,
  // which has one free slot; then node 3 is killed with SIGKILL.
  ASSERT_EQ(n1.Local().size(), 3u);
  ASSERT_EQ(n3.Local().size(), 3u);
  EXPECT_EQ(n3.p->Call("DELETE", "/v1/sessions/" + *n3.Local().begin()).status, 204);
  SleepMs(300);
  Publisher pub({"publish", "--server", n1.url(), "-i", Media("sample_360p30.ivf"), "--session", "pr", "--mode",
                 "bypass", "--retry", "--seconds", "60"});
  for (int i = 0; i < 50 && !n3.Local().count("pr"); ++i) SleepMs(100);
  ASSERT_TRUE(n3.Local().count("pr")) << "placed on the node with room";
  std::set<std::string> lost = n3.Local();
  lost.erase("pr");
  n3.p->Stop(SIGKILL);
  const double kill_t0 = NowMs();
  for (const std::string& id : n1.Local()) EXPECT_EQ(n1.p->Call("DELETE", "/v1/sessions/" + id).status, 204);
  // The publisher notices (its node is unreachable) and publishes again through node 1.
  double relanded_ms = -1;
  while (NowMs() - kill_t0 < 8000 && relanded_ms < 0) {
    const Reply st = n1.p->Call("GET", "/v1/sessions/pr/stats");
    if (st.status == 200 && st.body.value("frames_received", 0) > 0) relanded_ms = NowMs() - kill_t0;
    else SleepMs(50);
  }
  std::printf("the --retry publisher's session received frames on node 1 %.0f ms after SIGKILL of node 3\n",
              relanded_ms);
  EXPECT_GE(relanded_ms, 0);
  EXPECT_LE(relanded_ms, 5000);
  // The dead node and its sessions leave the directory within the 3-s TTL.
  double gone_ms = -1;
  while (NowMs() - kill_t0 < 6000) {
    bool any = false;
    const Reply now = n1.p->Call("GET", "/v1/sessions");  // (kept: the loop must not run over a temporary)
    ASSERT_EQ(now.status, 200);
    for (const json& s : now.body["sessions"])
      if (s.value("node", "") == "node-3") any = true;
    if (!any) {
      gone_ms = NowMs() - kill_t0;
      break;
    }
    SleepMs(100);
  }
  std::printf("node 3's sessions left the directory %.0f ms after SIGKILL\n", gone_ms);
  // The record's TTL is 3 s from its last heartbeat (at most 1 s before the kill): 2-3 s. The
  // bound leaves room for a loaded 2-core machine or a sanitizer build polling slower.
  EXPECT_GE(gone_ms, 0);
  EXPECT_LE(gone_ms, 4000);
  // The others re-POST to the entry URL and land on node 1 (the only node left, with room).
  for (const std::string& id : lost) {
    const Hop c = Follow("POST", n1.url() + "/v1/sessions", json{{"id", id}}.dump());
    EXPECT_EQ(c.status, 201) << c.text;
  }
  lost.insert("pr");
  EXPECT_EQ(n1.Local(), lost);

  // --- Redis loss: node 1 serves on (the publisher's frames keep coming), says the cluster is
  // degraded, and takes new sessions locally.
  const std::set<std::string> held = n1.Local();
  redis.Stop();
  const int frames0 = n1.p->Call("GET", "/v1/sessions/pr/stats").body.value("frames_received", 0);
  SleepMs(1500);
  Reply r1 = n1.p->Call("GET", "/readyz");
  EXPECT_EQ(r1.body["cluster"]["state"], "degraded") << r1.text;
  EXPECT_EQ(n1.Local(), held);
  const int frames1 = n1.p->Call("GET", "/v1/sessions/pr/stats").body.value("frames_received", 0);
  EXPECT_GT(frames1 - frames0, 30) << "media flows without Redis";
  // Redis back: within a heartbeat or two the directory is whole again.
  redis.Start();
  double whole_ms = -1;
  const double t0 = NowMs();
  while (NowMs() - t0 < 5000) {
    size_t n = 0;
    for (const std::string& id : held) n += redis.Cli("GET veil:session:" + id).find("node-1") != std::string::npos;
    if (n == held.size()) {
      whole_ms = NowMs() - t0;
      break;
    }
    SleepMs(100);
  }
  std::printf("directory whole again %.0f ms after Redis restarted (%zu sessions)\n", whole_ms, held.size());
  EXPECT_GE(whole_ms, 0);
  r1 = n1.p->Call("GET", "/readyz");
  EXPECT_EQ(r1.body["cluster"]["state"], "ok") << r1.text;
  EXPECT_EQ(n1.p->Stop(SIGTERM), 0);
}

// A slot placed on a node stays reserved until that node publishes a state that counts the
// session, or until the reservation expires. The heartbeat used to clear every reservation,
// so a beat whose state was read before the placed client arrived dropped one that was still
// on its way: a later placement filled the slot twice and the client was refused (a CI run of
// ThreeNodesOneEntryUrl under the sanitizers: 503 "session limit reached" while another node
// had room). Two registries in this process, their beats called by hand.
TEST(Cluster, APlacedSlotStaysReservedUntilItsNodeCountsTheSession) {
  const int redis_port = FreePort();
  RedisProcess redis(redis_port);
  ASSERT_NE(redis.Cli("PING").find("PONG"), std::string::npos) << "redis-server did not start";
  struct FakeNode {
    std::atomic<int> sessions{0};
    int capacity = 0;
    MetricsRegistry metrics;
    std::unique_ptr<ClusterRegistry> reg;
  };
  auto start = [&](FakeNode& n, const std::string& id, int capacity, double heartbeat_ms, double ttl_ms) {
    n.capacity = capacity;
    ClusterSettings s;
    s.redis = redis.url();
    s.node_id = id;
    s.public_url = "http://127.0.0.1:1/" + id;
    s.heartbeat_ms = heartbeat_ms;
    s.ttl_ms = ttl_ms;
    auto r = ClusterRegistry::Start(s, [&n] {
      NodeState st;
      st.sessions = n.sessions.load();
      st.capacity = n.capacity;
      st.free_sessions = n.capacity - st.sessions;
      for (int i = 0; i < st.sessions; ++i) {
        std::string id = "s";  // appended, not "s" + to_string: gcc 12's -Wrestrict misreads that
        st.session_ids.push_back(id += std::to_string(i));
      }
      return st;
    }, &n.metrics);
    ASSERT_TRUE(r.ok()) << r.error();
    n.reg = std::move(*r);
  };
  auto reserved = [&](const std::string& id) {
    return std::atoi(redis.Cli("ZCARD veil:reservations:" + id).c_str());
  };
  FakeNode a, b;  // a: two slots; b: the entry node, full
  start(a, "a", 2, 60000, 120000);  // no beat but those the test asks for
  start(b, "b", 0, 60000, 120000);
  ASSERT_TRUE(a.reg && b.reg);

  ClusterRegistry::Placement p = b.reg->PlaceNew();
  ASSERT_FALSE(p.local) << p.why;
  EXPECT_EQ(p.node.id, "a");
  EXPECT_TRUE(p.reserved);
  // a beats before the client it was given arrives: its state still says 2 free.
  a.reg->Beat();
  EXPECT_EQ(reserved("a"), 1) << "a beat that does not count the session keeps its reservation";
  p = b.reg->PlaceNew();
  ASSERT_FALSE(p.local) << p.why;
  EXPECT_EQ(p.node.id, "a");
  p = b.reg->PlaceNew();
  EXPECT_TRUE(p.local) << "a's two slots are both reserved, not placed a third time: " << p.node.id;
  EXPECT_EQ(reserved("a"), 2);

  // The first client arrives: its session exists, then its request is answered.
  a.sessions = 1;
  a.reg->PlacedRequestAnswered();  // asks a's thread for a beat
  for (int i = 0; i < 100 && reserved("a") != 1; ++i) SleepMs(20);
  EXPECT_EQ(reserved("a"), 1) << "taken back by the beat that published the session";
  const std::vector<NodeRecord> nodes = b.reg->Nodes();
  auto ra = std::find_if(nodes.begin(), nodes.end(), [](const NodeRecord& r) { return r.id == "a"; });
  ASSERT_NE(ra, nodes.end());
  EXPECT_EQ(ra->state.free_sessions, 1);
  EXPECT_TRUE(b.reg->PlaceNew().local) << "1 free, 1 on its way: still full";
  a.sessions = 2;
  a.reg->PlacedRequestAnswered();
  for (int i = 0; i < 100 && reserved("a") != 0; ++i) SleepMs(20);
  EXPECT_EQ(reserved("a"), 0);
  EXPECT_TRUE(b.reg->PlaceNew().local);

  // A reservation whose client never comes expires on its own (the placing node's ttl_ms), and
  // the slot is placed again.
  FakeNode c, e;  // c: one slot; e: an entry node, full; both beat every 100 ms with a 600-ms TTL
  start(c, "c", 1, 100, 600);
  start(e, "e", 0, 100, 600);
  ASSERT_TRUE(c.reg && e.reg);
  p = e.reg->PlaceNew();
  ASSERT_FALSE(p.local) << p.why;
  EXPECT_EQ(p.node.id, "c");
  EXPECT_TRUE(e.reg->PlaceNew().local) << "c's one slot is reserved";
  SleepMs(900);  // past the reservation's 600 ms
  EXPECT_EQ(reserved("c"), 0);
  p = e.reg->PlaceNew();
  ASSERT_FALSE(p.local) << p.why;
  EXPECT_EQ(p.node.id, "c");
}

// issue 15 items 6 and the acceptance's spread and privacy: `veil load` through node 1 only
// follows the 307s, the sessions spread by free slots, every node's figures come from its own
// /metrics, and a session placed on another node shows no annotated face to its viewer.
TEST(Cluster, LoadThroughTheEntryUrlSpreadsAndShowsNoFace) {
#if defined(VEIL_SANITIZED_BUILD)
  GTEST_SKIP() << "media at full rate on three nodes: the optimized build's subject (ThreeNodesOneEntryUrl "
                  "covers the cluster code under the sanitizers)";
#endif
  const int redis_port = FreePort();
  RedisProcess redis(redis_port);
  ASSERT_NE(redis.Cli("PING").find("PONG"), std::string::npos) << "redis-server did not start";
  Node n1 = StartNode(redis, "node-1", "127.0.0.11", 2);
  Node n2 = StartNode(redis, "node-2", "127.0.0.12", 2);
  Node n3 = StartNode(redis, "node-3", "127.0.0.13", 2);
  for (Node* n : {&n1, &n2, &n3}) ASSERT_TRUE(n->p->ok()) << n->p->log();
  SleepMs(1200);

  // veil load, 3 anonymized 360p sessions through node 1: one lands on each node (2 slots each:
  // the first stays, ties go to the receiving node, then the emptiest nodes).
  LoadOptions lo;
  lo.server = n1.url();
  lo.input = Media("leakcheck/input_360p.ivf");
  lo.mode = "anonymize";
  lo.stages = {3};
  lo.stage_seconds = 8;
  lo.warmup_seconds = 3;
  lo.label = "cluster";
  auto run = RunLoad(lo, {});
  ASSERT_TRUE(run.ok()) << run.error();
  ASSERT_EQ(run->stages.size(), 1u) << run->stopped;
  const StageResult& st = run->stages[0];
  std::map<std::string, int> per_node;
  for (const auto& [url, nf] : st.nodes) {
    per_node[url] = nf.sessions;
    std::printf("load through node 1: %s held %d session(s): %.2f fps (worst %.2f), p99 processing %.1f ms, CPU %.0f%%\n",
                url.c_str(), nf.sessions, nf.fps_mean, nf.fps_worst, nf.proc_p99_ms, nf.server_cpu_pct);
  }
  std::printf("in total: %.2f fps (worst %.2f), p99 %.1f ms, server CPU %.0f%% -> %s\n", st.fps_mean, st.fps_worst,
              st.proc_p99_ms, st.server_cpu_pct, st.passed ? "pass" : st.verdict.c_str());
  EXPECT_EQ(per_node, (std::map<std::string, int>{{n1.url(), 1}, {n2.url(), 1}, {n3.url(), 1}}));
  // Media flows through every node at about full rate. Whether the stage passes the p99 mark is
  // reported, not asserted: this test shares the CI machine with others (scripts/cluster-load.sh
  // measures the spread alone, docs/figures.md).
  EXPECT_GT(st.fps_worst, 20) << st.verdict;
  for (const auto& [url, nf] : st.nodes) EXPECT_GT(nf.server_cpu_pct, 1) << url << ": its own /metrics were read";
  for (Node* n : {&n1, &n2, &n3}) EXPECT_TRUE(n->Local().empty()) << n->id << ": the load tool deletes its sessions";

  // A session through node 1 while node 1 is the fullest: 307 to node 2 or 3; its viewer is
  // added through node 1 as well (307 to the holder). Judged against the clip's ground truth.
  ASSERT_EQ(Follow("POST", n1.url() + "/v1/sessions", json{{"id", "filler"}}.dump()).status, 201);
  SleepMs(1200);  // node 1's heartbeat says it has one slot left
  int hops = 0;
  const Hop created = Follow("POST", n1.url() + "/v1/sessions", json{{"id", "gt"}}.dump(), &hops);
  ASSERT_EQ(created.status, 201) << created.text;
  EXPECT_EQ(hops, 1) << "placed on another node";
  EXPECT_FALSE(n1.Local().count("gt"));
  const SourceClip& src = Source("leakcheck/input_360p.ivf");
  ASSERT_TRUE(src.ground_truth);
  auto log = std::make_shared<SentLog>();
  Watch watch("vp8", log, src);
  const Hop viewer = Follow("POST", n1.url() + "/v1/sessions/gt/viewers",
                            json{{"host", "127.0.0.1"}, {"video_port", watch.port()}}.dump());
  ASSERT_EQ(viewer.status, 201) << viewer.text;
  Feed feed(created.body, log, 0, src);
  SleepMs(5000);
  feed.Stop();
  SleepMs(300);
  const Summary sum = Summarize(watch.checks(), 0, 1e300);
  std::printf("session placed by 307: %d frames received, %d annotated faces judged, %d visible\n", sum.frames,
              sum.faces, sum.leaked);
  EXPECT_GT(sum.frames, 100);
  EXPECT_GT(sum.faces, 100);
  ExpectOnlyCadenceLeaks(sum, "the session placed by 307");
  for (Node* n : {&n1, &n2, &n3}) EXPECT_EQ(n->p->Stop(SIGTERM), 0) << n->id;
}

TEST(Cluster, BadSettingsAreRefusedAtStart) {
  RunResult r = RunVeil("serve --listen 127.0.0.1:0 --redis http://x:1");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("cluster.redis must be redis://HOST:PORT"), std::string::npos) << r.out;
  r = RunVeil("serve --listen 127.0.0.1:0 --redis redis://127.0.0.1:6379 --node-id 'a b'");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("cluster.node_id must be"), std::string::npos) << r.out;
  r = RunVeil("serve --listen 127.0.0.1:0 --drain-timeout-s -1");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("server.drain_timeout_s must be in [0"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace veil::test
