// Many veil nodes as one service (issue 15): the node registry and session
// directory in Redis, and placement of new sessions by headroom.
//
// Redis keys (docs/cluster.md):
//   veil:nodes              set of node ids (members whose record expired are pruned by readers)
//   veil:node:{id}          the node's record, JSON, expires after ttl_ms unless the heartbeat renews it
//   veil:session:{sid}      the id of the node holding session sid, renewed with the heartbeat
//   veil:reservations:{id}  sessions placed on node id whose requests it has not yet answered
//                           and counted in its record (a burst guard): a sorted set, each
//                           member expiring ttl_ms after it was placed
//
// Every heartbeat (heartbeat_ms) writes the whole local state again, so a
// node re-registers by itself when Redis comes back, and a node that dies
// disappears with its sessions within ttl_ms (readers skip its record after
// 2.5 heartbeats already). While Redis is unreachable the
// registry is "degraded": placement answers "here" and lookups "unknown", so
// the node keeps serving its own sessions and takes new ones locally.
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cluster/redis.h"
#include "core/metrics.h"
#include "core/mutex.h"
#include "core/status.h"

namespace veil {

struct ClusterSettings {
  std::string redis;       // redis://HOST:PORT[/DB]; empty: no cluster
  std::string node_id;     // unique per node
  std::string public_url;  // how clients reach this node's API/WHIP/WHEP, e.g. http://10.0.0.5:8080
  std::string media_address;  // RTP ingest / ICE address clients send media to
  double heartbeat_ms = 1000, ttl_ms = 3000;
  int redis_timeout_ms = 200;
};

// What a node publishes about itself.
struct NodeState {
  int sessions = 0;
  int capacity = 0;        // default sessions an empty node carries
  int free_sessions = 0;   // default sessions that still fit
  // Sessions of each kind ("codec/mode", e.g. "vp8/bypass") that still fit: a forwarded bypass
  // session costs a sixth of an anonymized one, so placement counts in the kind asked for.
  std::map<std::string, int> free_by_kind;
  double headroom = 0;     // 0..1
  bool draining = false;
  bool ready = true;       // /readyz (draining or no AI target: false)
  std::vector<std::string> session_ids;
};

struct NodeRecord {
  std::string id, url, media;
  NodeState state;
  double updated_unix_ms = 0;
};

class ClusterRegistry {
 public:
  // Starts the heartbeat. Fails only on bad settings: an unreachable Redis is "degraded", not an error.
  static Result<std::unique_ptr<ClusterRegistry>> Start(const ClusterSettings& s, std::function<NodeState()> local,
                                                        MetricsRegistry* metrics);
  ~ClusterRegistry();  // stops the heartbeat and removes this node's record and sessions (best effort)

  struct Placement {
    bool local = true;   // take the session here
    bool reserved = false;  // a slot was reserved on that node (see PlacedRequestAnswered)
    NodeRecord node;     // else: redirect to this node
    std::string why;     // for the log
  };
  // Where a new session of `kind` ("codec/mode"; "" or unknown: the default kind) goes: the
  // ready, non-draining node with the most free sessions of that kind after reservations
  // (ties: this node, then the lowest id), with a slot reserved there atomically. Degraded or
  // no room anywhere: here.
  Placement PlaceNew(const std::string& kind = "");
  // A create request that a placement reserved a slot here for (it carries placed=<this
  // node>) has been answered, with a session or an error. The next heartbeat takes the
  // reservation back, in the same Redis round trip that publishes a state counting that
  // session (at once: it asks for a beat). So placement never counts a placed session in
  // neither (which let a burst overfill a node); it counts it in both (a node with room looks
  // full) only from the answer until that beat.
  void PlacedRequestAnswered();
  // The node holding `session` when it is another live node.
  std::optional<NodeRecord> RemoteHolder(const std::string& session);
  // Every live node's record (this node's as last published).
  std::vector<NodeRecord> Nodes();
  // A heartbeat now, on the calling thread.
  void Beat();
  // A heartbeat as soon as the registry's thread can: a session started or ended, and the
  // directory should say so before the next regular beat.
  void BeatSoon();
  bool degraded() const { return degraded_.load(); }
  std::string status() const;  // "ok" or "degraded: <why>"
  const ClusterSettings& settings() const { return s_; }

 private:
  ClusterRegistry(const ClusterSettings& s, std::function<NodeState()> local);
  void Loop();
  void MarkDegraded(const std::string& why);
  void MarkOk();
  std::optional<NodeRecord> Record(const std::string& id);
  // A record not renewed for kStaleBeats heartbeats belongs to a node that stopped (killed,
  // frozen, cut off) even before Redis expires it (ttl_ms): it is neither placed on nor
  // redirected to. Node clocks are compared: they must agree within a second (NTP).
  static constexpr double kStaleBeats = 2.5;
  bool Fresh(const NodeRecord& r) const;

  const ClusterSettings s_;
  std::function<NodeState()> local_;
  RedisClient redis_;
  std::atomic<bool> degraded_{false};
  std::atomic<int> answered_{0};              // PlacedRequestAnswered since the last heartbeat
  std::atomic<uint64_t> reservation_seq_{0};  // with start_ms_: unique reservation members
  const int64_t start_ms_;
  mutable Mutex mu_;
  std::string degraded_why_ GUARDED_BY(mu_);
  NodeState last_ GUARDED_BY(mu_);  // what the last heartbeat published
  std::thread thread_;
  Mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ GUARDED_BY(stop_mu_) = false;
  bool soon_ GUARDED_BY(stop_mu_) = false;
  Gauge* m_nodes_ = nullptr;
  Gauge* m_degraded_ = nullptr;
  Counter* m_redirects_ = nullptr;
};

}  // namespace veil
