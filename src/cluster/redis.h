// A small synchronous Redis client (hiredis) for the node registry: one
// connection, short timeouts, reconnect on the next call after a failure.
// Not a general client: commands are argv vectors, replies are strings,
// integers, nil or arrays of those.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"

struct redisContext;

namespace veil {

struct RedisAddress {
  std::string host = "127.0.0.1";
  int port = 6379;
  int db = 0;
};

// redis://HOST:PORT[/DB]. Nothing else (no TLS, no password): the registry is for a private network.
Result<RedisAddress> ParseRedisUrl(const std::string& url);

struct RedisReply {
  enum class Type { kNil, kString, kInteger, kArray, kStatus } type = Type::kNil;
  std::string str;          // kString, kStatus
  long long integer = 0;    // kInteger
  std::vector<RedisReply> elements;  // kArray
};

class RedisClient {
 public:
  RedisClient(const RedisAddress& a, int timeout_ms);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;
  // One command; connects first when not connected. A server error reply is an error.
  Result<RedisReply> Command(const std::vector<std::string>& argv);
  // Several commands in one round trip (pipelined); the first failure is the result.
  Result<std::vector<RedisReply>> Pipeline(const std::vector<std::vector<std::string>>& commands);

 private:
  Status ConnectLocked() REQUIRES(mu_);
  void DropLocked() REQUIRES(mu_);
  const RedisAddress addr_;
  const int timeout_ms_;
  Mutex mu_;
  redisContext* ctx_ GUARDED_BY(mu_) = nullptr;
};

}  // namespace veil
