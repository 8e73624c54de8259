#include "cluster/registry.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/clock.h"
#include "core/thread_cpu.h"

namespace veil {
namespace {

using json = nlohmann::json;

const std::string kNodes = "veil:nodes";
std::string NodeKey(const std::string& id) { return "veil:node:" + id; }
std::string SessionKey(const std::string& sid) { return "veil:session:" + sid; }
std::string ReserveKey(const std::string& id) { return "veil:reservations:" + id; }

// Reservations are members of a sorted set per node, scored by the Redis-clock millisecond at
// which each expires: every one lives its own ttl_ms unless the node takes it back.
// Both scripts first drop the expired ones (one clock for all nodes: Redis's TIME).
#define VEIL_LUA_NOW                                                       \
  "if redis.replicate_commands then redis.replicate_commands() end\n"     \
  "local t = redis.call('TIME')\n"                                         \
  "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n" \
  "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)\n"

// Atomically: one more session placed on a node, unless that would pass its free slots.
// KEYS[1] the node's reservations, ARGV[1] its free slots, ARGV[2] a reservation's lifetime
// (ms), ARGV[3] a unique member. Returns the reservations now held, or 0 when full.
const char* kReserve = VEIL_LUA_NOW R"(
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return n + 1)";

// A node takes back ARGV[1] reservations (the oldest): requests placed on it that it has
// answered, and whose sessions the state it publishes with this script counts.
const char* kTakeBack = VEIL_LUA_NOW R"(
local k = tonumber(ARGV[1])
if k > 0 then redis.call('ZPOPMIN', KEYS[1], k) end
return redis.call('ZCARD', KEYS[1]))";
#undef VEIL_LUA_NOW

// Deletes a key only while it still holds the value (a session id another node took since stays).
const char* kDeleteIfValue = R"(
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0)";

json ToJson(const NodeRecord& r) {
  return {{"id", r.id},
          {"url", r.url},
          {"media", r.media},
          {"sessions", r.state.sessions},
          {"capacity", r.state.capacity},
          {"free_sessions", r.state.free_sessions},
          {"free_by_kind", r.state.free_by_kind},
          {"headroom", r.state.headroom},
          {"draining", r.state.draining},
          {"ready", r.state.ready},
          {"session_ids", r.state.session_ids},
          {"updated_unix_ms", r.updated_unix_ms}};
}

std::optional<NodeRecord> FromJson(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  try {
    NodeRecord r;
    r.id = j.at("id").get<std::string>();
    r.url = j.at("url").get<std::string>();
    r.media = j.value("media", "");
    r.state.sessions = j.value("sessions", 0);
    r.state.capacity = j.value("capacity", 0);
    r.state.free_sessions = j.value("free_sessions", 0);
    r.state.free_by_kind = j.value("free_by_kind", std::map<std::string, int>{});
    r.state.headroom = j.value("headroom", 0.0);
    r.state.draining = j.value("draining", false);
    r.state.ready = j.value("ready", false);
    r.state.session_ids = j.value("session_ids", std::vector<std::string>{});
    r.updated_unix_ms = j.value("updated_unix_ms", 0.0);
    return r;
  } catch (const std::exception&) {
    return std::nullopt;  // another program's key, or a future format: not a node we can use
  }
}

}  // namespace

ClusterRegistry::ClusterRegistry(const ClusterSettings& s, std::function<NodeState()> local)
    : s_(s), local_(std::move(local)), redis_(*ParseRedisUrl(s.redis), s.redis_timeout_ms), start_ms_(int64_t(UnixMs())) {}

Result<std::unique_ptr<ClusterRegistry>> ClusterRegistry::Start(const ClusterSettings& s,
                                                                std::function<NodeState()> local,
                                                                MetricsRegistry* metrics) {
  if (auto a = ParseRedisUrl(s.redis); !a) return a.status();
  if (s.node_id.empty()) return Status::Error("cluster.node_id must not be empty");
  if (s.public_url.rfind("http://", 0) != 0 && s.public_url.rfind("https://", 0) != 0)
    return Status::Error("cluster.public_url must be an http(s):// URL, got '" + s.public_url + "'");
  std::unique_ptr<ClusterRegistry> r(new ClusterRegistry(s, std::move(local)));
  r->m_nodes_ = &metrics->GetGauge("veil_cluster_nodes", "Live nodes in the registry, as this node last saw them");
  r->m_degraded_ = &metrics->GetGauge("veil_cluster_degraded", "1 while Redis is unreachable (sessions are placed locally)");
  r->m_redirects_ = &metrics->GetCounter("veil_cluster_redirects_total", "Requests answered 307 to another node");
  r->Beat();  // registered before the first request
  r->thread_ = std::thread([p = r.get()] {
    NameThisThread("cluster");
    p->Loop();
  });
  return r;
}

ClusterRegistry::~ClusterRegistry() {
  {
    MutexLock lk(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (degraded_) return;
  NodeState last;
  {
    MutexLock lk(mu_);
    last = last_;
  }
  std::vector<std::vector<std::string>> cmds = {{"DEL", NodeKey(s_.node_id)}, {"SREM", kNodes, s_.node_id},
                                                {"DEL", ReserveKey(s_.node_id)}};
  for (const std::string& sid : last.session_ids) cmds.push_back({"EVAL", kDeleteIfValue, "1", SessionKey(sid), s_.node_id});
  if (auto r = redis_.Pipeline(cmds); !r) spdlog::warn("cluster: could not deregister: {}", r.error());
}

void ClusterRegistry::Loop() {
  for (;;) {
    {
      MutexLock lk(stop_mu_);
      lk.WaitFor(stop_cv_, std::chrono::milliseconds(int(s_.heartbeat_ms)),
                 [&]() REQUIRES(stop_mu_) { return stop_ || soon_; });
      if (stop_) return;
      soon_ = false;
    }
    Beat();
  }
}

void ClusterRegistry::PlacedRequestAnswered() {
  answered_.fetch_add(1);
  BeatSoon();
}

void ClusterRegistry::BeatSoon() {
  {
    MutexLock lk(stop_mu_);
    soon_ = true;
  }
  stop_cv_.notify_all();
}

void ClusterRegistry::MarkDegraded(const std::string& why) {
  MutexLock lk(mu_);
  if (!degraded_.exchange(true)) spdlog::warn("cluster degraded: {} (serving and placing sessions locally)", why);
  degraded_why_ = why;
  m_degraded_->Set(1);
}

void ClusterRegistry::MarkOk() {
  MutexLock lk(mu_);
  if (degraded_.exchange(false)) spdlog::info("cluster: Redis is back; this node re-registered its sessions");
  degraded_why_.clear();
  m_degraded_->Set(0);
}

std::string ClusterRegistry::status() const {
  MutexLock lk(mu_);
  return degraded_ ? "degraded: " + degraded_why_ : "ok";
}

void ClusterRegistry::Beat() {
  NodeRecord me;
  me.id = s_.node_id;
  me.url = s_.public_url;
  me.media = s_.media_address;
  // Read before the state: every request counted here was answered, so a session it created
  // is in the state. One answered after the read keeps its reservation one beat longer.
  const int answered = answered_.exchange(0);
  me.state = local_();
  me.updated_unix_ms = UnixMs();
  const std::string ttl = std::to_string(int64_t(s_.ttl_ms));
  std::vector<std::vector<std::string>> cmds = {
      {"SET", NodeKey(me.id), ToJson(me).dump(), "PX", ttl},
      {"SADD", kNodes, me.id},
      {"EVAL", kTakeBack, "1", ReserveKey(me.id), std::to_string(answered)},
      {"SCARD", kNodes}};
  for (const std::string& sid : me.state.session_ids) cmds.push_back({"SET", SessionKey(sid), me.id, "PX", ttl});
  NodeState previous;
  {
    MutexLock lk(mu_);
    previous = last_;
    last_ = me.state;
  }
  for (const std::string& sid : previous.session_ids)  // ended since the last beat
    if (std::find(me.state.session_ids.begin(), me.state.session_ids.end(), sid) == me.state.session_ids.end())
      cmds.push_back({"EVAL", kDeleteIfValue, "1", SessionKey(sid), me.id});
  auto r = redis_.Pipeline(cmds);
  if (!r) {
    answered_ += answered;  // taken back once Redis answers again (or expired by then)
    return MarkDegraded(r.error());
  }
  m_nodes_->Set(double((*r)[3].integer));
  MarkOk();
}

bool ClusterRegistry::Fresh(const NodeRecord& r) const {
  return UnixMs() - r.updated_unix_ms <= kStaleBeats * s_.heartbeat_ms;
}

std::optional<NodeRecord> ClusterRegistry::Record(const std::string& id) {
  auto r = redis_.Command({"GET", NodeKey(id)});
  if (!r) {
    MarkDegraded(r.error());
    return std::nullopt;
  }
  if (r->type != RedisReply::Type::kString) return std::nullopt;
  return FromJson(r->str);
}

std::vector<NodeRecord> ClusterRegistry::Nodes() {
  std::vector<NodeRecord> out;
  if (degraded_) return out;
  auto ids = redis_.Command({"SMEMBERS", kNodes});
  if (!ids) {
    MarkDegraded(ids.error());
    return out;
  }
  std::vector<std::string> names;
  for (const RedisReply& e : ids->elements) names.push_back(e.str);
  if (names.empty()) return out;
  std::vector<std::string> mget = {"MGET"};
  for (const std::string& n : names) mget.push_back(NodeKey(n));
  auto recs = redis_.Command(mget);
  if (!recs) {
    MarkDegraded(recs.error());
    return out;
  }
  std::vector<std::string> gone = {"SREM", kNodes};
  for (size_t i = 0; i < names.size() && i < recs->elements.size(); ++i) {
    const RedisReply& e = recs->elements[i];
    std::optional<NodeRecord> rec = e.type == RedisReply::Type::kString ? FromJson(e.str) : std::nullopt;
    if (rec && Fresh(*rec)) out.push_back(std::move(*rec));
    else if (e.type == RedisReply::Type::kNil) gone.push_back(names[i]);  // expired: the node is gone
  }
  if (gone.size() > 2) redis_.Command(gone);  // best effort; the next reader prunes again
  return out;
}

ClusterRegistry::Placement ClusterRegistry::PlaceNew(const std::string& kind) {
  Placement p;
  if (degraded_) {
    p.why = "cluster degraded";
    return p;
  }
  std::vector<NodeRecord> nodes = Nodes();
  if (degraded_) {
    p.why = "cluster degraded";
    return p;
  }
  const NodeState here = local_();  // fresher than this node's record
  bool found_self = false;
  for (NodeRecord& n : nodes)
    if (n.id == s_.node_id) {
      n.state = here;
      found_self = true;
    }
  if (!found_self) nodes.push_back({s_.node_id, s_.public_url, s_.media_address, here, UnixMs()});
  std::vector<std::vector<std::string>> counts;
  for (const NodeRecord& n : nodes) counts.push_back({"ZCARD", ReserveKey(n.id)});
  auto res = redis_.Pipeline(counts);  // (expired ones still count until that node's next beat)
  if (!res) {
    MarkDegraded(res.error());
    p.why = "cluster degraded";
    return p;
  }
  struct Candidate {
    const NodeRecord* node;
    int slots;  // of the kind asked for
    int free;   // after reservations
  };
  std::vector<Candidate> c;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeRecord& n = nodes[i];
    if (n.state.draining || !n.state.ready) continue;
    const int reserved = i < res->size() ? int((*res)[i].integer) : 0;
    auto k = n.state.free_by_kind.find(kind);
    const int free = k != n.state.free_by_kind.end() ? k->second : n.state.free_sessions;
    c.push_back({&n, free, free - reserved});
  }
  std::sort(c.begin(), c.end(), [&](const Candidate& a, const Candidate& b) {
    if (a.free != b.free) return a.free > b.free;
    const bool la = a.node->id == s_.node_id, lb = b.node->id == s_.node_id;
    if (la != lb) return la;
    return a.node->id < b.node->id;
  });
  for (const Candidate& k : c) {
    if (k.free <= 0) break;
    auto r = redis_.Command({"EVAL", kReserve, "1", ReserveKey(k.node->id), std::to_string(k.slots),
                             std::to_string(int64_t(s_.ttl_ms)),
                             s_.node_id + "/" + std::to_string(reservation_seq_++) + "/" + std::to_string(start_ms_)});
    if (!r) {
      MarkDegraded(r.error());
      p.why = "cluster degraded";
      return p;
    }
    if (r->integer <= 0) continue;  // taken by a concurrent placement: the next best
    p.local = k.node->id == s_.node_id;
    p.reserved = true;
    p.node = *k.node;
    p.why = "most free " + (kind.empty() ? std::string("default") : kind) + " sessions (" + std::to_string(k.free) +
            ") on " + k.node->id;
    if (!p.local) m_redirects_->Inc();
    return p;
  }
  p.why = "no node has room: here, which refuses it";
  return p;
}

std::optional<NodeRecord> ClusterRegistry::RemoteHolder(const std::string& session) {
  if (degraded_) return std::nullopt;
  auto r = redis_.Command({"GET", SessionKey(session)});
  if (!r) {
    MarkDegraded(r.error());
    return std::nullopt;
  }
  if (r->type != RedisReply::Type::kString || r->str == s_.node_id) return std::nullopt;
  auto rec = Record(r->str);
  if (!rec || !Fresh(*rec)) return std::nullopt;  // its node is gone (or about to expire): not held
  m_redirects_->Inc();
  return rec;
}

}  // namespace veil
