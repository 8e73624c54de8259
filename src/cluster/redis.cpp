#include "cluster/redis.h"

#include <charconv>

#include <hiredis/hiredis.h>

namespace veil {
namespace {

RedisReply Convert(const redisReply* r) {
  RedisReply o;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      o.type = RedisReply::Type::kString;
      o.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      o.type = RedisReply::Type::kStatus;
      o.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      o.type = RedisReply::Type::kInteger;
      o.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      o.type = RedisReply::Type::kArray;
      for (size_t i = 0; i < r->elements; ++i) o.elements.push_back(Convert(r->element[i]));
      break;
    default:
      o.type = RedisReply::Type::kNil;
  }
  return o;
}

timeval Tv(int ms) { return timeval{ms / 1000, (ms % 1000) * 1000}; }

}  // namespace

Result<RedisAddress> ParseRedisUrl(const std::string& url) {
  const std::string scheme = "redis://";
  auto bad = [&](const std::string& why) {
    return Status::Error("cluster.redis must be redis://HOST:PORT[/DB] (" + why + "), got '" + url + "'");
  };
  if (url.rfind(scheme, 0) != 0) return bad("scheme");
  std::string rest = url.substr(scheme.size());
  RedisAddress a;
  if (const auto slash = rest.find('/'); slash != std::string::npos) {
    const std::string db = rest.substr(slash + 1);
    rest.resize(slash);
    if (!db.empty()) {
      auto r = std::from_chars(db.data(), db.data() + db.size(), a.db);
      if (r.ec != std::errc() || r.ptr != db.data() + db.size() || a.db < 0 || a.db > 15) return bad("database 0-15");
    }
  }
  if (rest.find('@') != std::string::npos) return bad("no credentials");
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos) {
    a.host = rest;
  } else {
    a.host = rest.substr(0, colon);
    const std::string p = rest.substr(colon + 1);
    auto r = std::from_chars(p.data(), p.data() + p.size(), a.port);
    if (p.empty() || r.ec != std::errc() || r.ptr != p.data() + p.size() || a.port < 1 || a.port > 65535)
      return bad("port");
  }
  if (a.host.empty()) return bad("host");
  return a;
}

RedisClient::RedisClient(const RedisAddress& a, int timeout_ms) : addr_(a), timeout_ms_(timeout_ms) {}

RedisClient::~RedisClient() {
  MutexLock lk(mu_);
  DropLocked();
}

void RedisClient::DropLocked() {
  if (ctx_) redisFree(ctx_);
  ctx_ = nullptr;
}

Status RedisClient::ConnectLocked() {
  if (ctx_) return Status::Ok();
  redisContext* c = redisConnectWithTimeout(addr_.host.c_str(), addr_.port, Tv(timeout_ms_));
  if (!c) return Status::Error("redis: out of memory");
  if (c->err) {
    const std::string why = c->errstr;
    redisFree(c);
    return Status::Error("redis " + addr_.host + ":" + std::to_string(addr_.port) + ": " + why);
  }
  redisSetTimeout(c, Tv(timeout_ms_));
  ctx_ = c;
  if (addr_.db != 0) {
    auto* r = static_cast<redisReply*>(redisCommand(ctx_, "SELECT %d", addr_.db));
    const bool ok = r && r->type != REDIS_REPLY_ERROR;
    if (r) freeReplyObject(r);
    if (!ok) {
      DropLocked();
      return Status::Error("redis: SELECT " + std::to_string(addr_.db) + " failed");
    }
  }
  return Status::Ok();
}

Result<RedisReply> RedisClient::Command(const std::vector<std::string>& argv) {
  auto r = Pipeline({argv});
  if (!r) return r.status();
  return std::move(r->front());
}

Result<std::vector<RedisReply>> RedisClient::Pipeline(const std::vector<std::vector<std::string>>& commands) {
  MutexLock lk(mu_);
  if (Status s = ConnectLocked(); !s) return s;
  for (const auto& argv : commands) {
    std::vector<const char*> args;
    std::vector<size_t> lens;
    for (const std::string& a : argv) {
      args.push_back(a.data());
      lens.push_back(a.size());
    }
    if (redisAppendCommandArgv(ctx_, int(args.size()), args.data(), lens.data()) != REDIS_OK) {
      const std::string why = ctx_->errstr;
      DropLocked();
      return Status::Error("redis: " + why);
    }
  }
  std::vector<RedisReply> out;
  Status first = Status::Ok();
  for (size_t i = 0; i < commands.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(ctx_, &raw) != REDIS_OK || !raw) {
      const std::string why = ctx_->err ? ctx_->errstr : "no reply";
      DropLocked();  // the connection's state is unknown: start again
      return Status::Error("redis: " + why);
    }
    auto* r = static_cast<redisReply*>(raw);
    if (r->type == REDIS_REPLY_ERROR && first.ok())
      first = Status::Error("redis " + commands[i].front() + ": " + std::string(r->str, r->len));
    out.push_back(Convert(r));
    freeReplyObject(r);
  }
  if (!first.ok()) return first;
  return out;
}

}  // namespace veil
