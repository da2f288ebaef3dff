#include "sluice/redis_module/module_test_support.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "sluice/store/redis/script_set.h"

namespace sluice::redis_module::test {
namespace {

Reply flatten(const redisReply& raw) {
  Reply reply{.type = raw.type};
  switch (raw.type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      reply.text.assign(raw.str, raw.len);
      break;
    case REDIS_REPLY_INTEGER:
      reply.integer = raw.integer;
      break;
    case REDIS_REPLY_ARRAY:
      for (std::size_t i = 0; i < raw.elements; ++i)
        reply.elements.push_back(flatten(*raw.element[i]));
      break;
    default:
      break;
  }
  return reply;
}

Reply broken(const char* what) {
  return {.type = REDIS_REPLY_ERROR, .text = std::string("connection: ") + what};
}

}  // namespace

void PrintTo(const Reply& reply, std::ostream* out) {
  if (reply.type == REDIS_REPLY_INTEGER) {
    *out << reply.integer;
  } else if (reply.type == REDIS_REPLY_ARRAY) {
    *out << "[";
    for (const Reply& element : reply.elements) {
      PrintTo(element, out);
      *out << " ";
    }
    *out << "]";
  } else {
    *out << "\"" << reply.text << "\" (type " << reply.type << ")";
  }
}

StatusOr<std::unique_ptr<Connection>> Connection::open(std::uint16_t port) {
  redisContext* context = redisConnect("127.0.0.1", port);
  if (context == nullptr || context->err != 0) {
    const std::string error = context != nullptr ? context->errstr : "out of memory";
    if (context != nullptr) redisFree(context);
    return unavailable("connecting to redis on port " + std::to_string(port) + ": " + error);
  }
  return std::unique_ptr<Connection>(new Connection(context));
}

Connection::~Connection() { redisFree(context_); }

std::vector<Reply> Connection::pipeline(const std::vector<std::vector<std::string>>& commands) {
  for (const std::vector<std::string>& args : commands) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const std::string& arg : args) {
      argv.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    redisAppendCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lengths.data());
  }
  std::vector<Reply> replies;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(context_, &raw) != REDIS_OK || raw == nullptr) {
      replies.push_back(broken(context_->errstr));
      continue;
    }
    replies.push_back(flatten(*static_cast<redisReply*>(raw)));
    freeReplyObject(raw);
  }
  return replies;
}

Reply Connection::command(const std::vector<std::string>& args) { return pipeline({args})[0]; }

void count_admitted(const std::vector<Reply>& replies, std::span<std::atomic<int>> admitted,
                    std::atomic<int>& failures) {
  for (std::size_t k = 0; k < replies.size() && k < admitted.size(); ++k) {
    if (replies[k].is_error() || replies[k].text.size() != store::kVerdictBytes) {
      failures.fetch_add(1);
      continue;
    }
    double allowed = 0;
    std::memcpy(&allowed, replies[k].text.data(), sizeof allowed);
    if (allowed == 1) admitted[k].fetch_add(1);
  }
}

std::string module_path() { return SLUICE_MODULE_PATH; }

StatusOr<std::unique_ptr<sluice::test::RedisServer>> start_redis_with_module(
    bool pinned_clock, std::vector<std::string> extra_args) {
  std::vector<std::string> args = {"--loadmodule", module_path()};
  if (pinned_clock) args.push_back("pinned-clock");
  for (std::string& arg : extra_args) args.push_back(std::move(arg));
  return sluice::test::RedisServer::start({.extra_args = std::move(args)});
}

std::vector<KeyState> read_key_states(Connection& connection,
                                      const std::vector<std::string>& keys) {
  std::vector<std::vector<std::string>> types;
  for (const std::string& key : keys) types.push_back({"TYPE", key});
  const std::vector<Reply> type_replies = connection.pipeline(types);
  std::vector<std::vector<std::string>> reads;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string& type = type_replies[i].text;
    if (type == "string") {
      reads.push_back({"GET", keys[i]});
    } else if (type == "zset") {
      reads.push_back({"ZRANGE", keys[i], "0", "-1", "WITHSCORES"});
    } else if (type == "hash") {
      reads.push_back({"HGETALL", keys[i]});
    } else {
      reads.push_back({"TYPE", keys[i]});
    }
    reads.push_back({"PTTL", keys[i]});
  }
  const std::vector<Reply> replies = connection.pipeline(reads);
  std::vector<KeyState> states;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    KeyState state{.type = type_replies[i].text};
    const Reply& value = replies[2 * i];
    if (value.type == REDIS_REPLY_ARRAY) {
      for (const Reply& element : value.elements) state.value.push_back(element.text);
      if (state.type == "hash") {
        // HGETALL's order is the hash's own: compare as field/value pairs, sorted.
        std::vector<std::pair<std::string, std::string>> fields;
        for (std::size_t j = 0; j + 1 < state.value.size(); j += 2) {
          fields.emplace_back(state.value[j], state.value[j + 1]);
        }
        std::sort(fields.begin(), fields.end());
        state.value.clear();
        for (auto& [field, data] : fields) {
          state.value.push_back(std::move(field));
          state.value.push_back(std::move(data));
        }
      }
    } else {
      state.value.push_back(value.text);
    }
    state.pttl = replies[2 * i + 1].integer;
    states.push_back(std::move(state));
  }
  return states;
}

}  // namespace sluice::redis_module::test
