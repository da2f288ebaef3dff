#include "testing/redis_sentinel.h"

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "testing/subprocess.h"

namespace sluice::test {

namespace {

using Clock = std::chrono::steady_clock;

StatusOr<std::string> sentinel_cli(std::uint16_t port, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"redis-cli", "-p", std::to_string(port)};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_checked(argv);
}

int count_lines_with(const std::string& text, const std::string& needle) {
  int n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

}  // namespace

StatusOr<std::unique_ptr<RedisSentinelGroup>> RedisSentinelGroup::start(
    RedisSentinelOptions options) {
  std::unique_ptr<RedisSentinelGroup> group(new RedisSentinelGroup(std::move(options)));
  StatusOr<std::unique_ptr<RedisServer>> master = RedisServer::start();
  if (!master.ok()) return master.status();
  group->master_ = std::move(*master);
  StatusOr<std::unique_ptr<RedisServer>> replica = RedisServer::start(
      {.extra_args = {"--replicaof", "127.0.0.1", std::to_string(group->master_->port())}});
  if (!replica.ok()) return replica.status();
  group->replica_ = std::move(*replica);
  for (int i = 0; i < group->options_.sentinels; ++i) {
    StatusOr<std::string> dir = make_temp_dir("sluice-sentinel-");
    if (!dir.ok()) return dir.status();
    group->sentinel_dirs_.push_back(*dir);
    if (Status status = group->start_sentinel(*dir); !status.ok()) return status;
  }
  if (Status ready = group->wait_until_ready(std::chrono::seconds(40)); !ready.ok()) return ready;
  return group;
}

Status RedisSentinelGroup::start_sentinel(const std::string& dir) {
  StatusOr<std::uint16_t> port = RedisServer::pick_free_port();
  if (!port.ok()) return port.status();
  const std::string conf = dir + "/sentinel.conf";
  const int quorum = options_.sentinels / 2 + 1;
  std::ofstream(conf) << "port " << *port << "\nbind 127.0.0.1\ndir " << dir
                      << "\nsentinel monitor " << options_.master_name << " 127.0.0.1 "
                      << master_->port() << " " << quorum << "\nsentinel down-after-milliseconds "
                      << options_.master_name << " " << options_.down_after.count()
                      << "\nsentinel failover-timeout " << options_.master_name << " 10000\n";
  StatusOr<pid_t> pid = spawn_logged({"redis-server", conf, "--sentinel"}, dir + "/sentinel.log");
  if (!pid.ok()) return pid.status();
  sentinel_ports_.push_back(*port);
  sentinel_pids_.push_back(*pid);
  return {};
}

Status RedisSentinelGroup::wait_until_ready(std::chrono::milliseconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  std::string last;
  for (;;) {
    bool ready = true;
    for (std::uint16_t port : sentinel_ports_) {
      // Sentinels learn replicas from the master's INFO (every 10 s) and each other from a
      // hello channel (every 2 s): both must be known before a failover can happen.
      StatusOr<std::string> replicas =
          sentinel_cli(port, {"SENTINEL", "REPLICAS", options_.master_name});
      StatusOr<std::string> peers =
          sentinel_cli(port, {"SENTINEL", "SENTINELS", options_.master_name});
      ready = replicas.ok() && peers.ok() &&
              replicas->find(std::to_string(replica_->port())) != std::string::npos &&
              count_lines_with(*peers, "\nname\n") + (peers->starts_with("name\n") ? 1 : 0) >=
                  static_cast<int>(sentinel_ports_.size()) - 1;
      if (!ready) {
        last = "sentinel " + std::to_string(port) + ": replicas " +
               (replicas.ok() ? *replicas : replicas.status().message()) + "; sentinels " +
               (peers.ok() ? *peers : peers.status().message());
        break;
      }
    }
    if (ready) return {};
    if (Clock::now() > deadline) {
      return Status(StatusCode::kDeadlineExceeded, "sentinels did not settle: " + last);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

RedisSentinelGroup::~RedisSentinelGroup() {
  for (pid_t pid : sentinel_pids_) {
    (void)stop_process(pid, SIGTERM, std::chrono::seconds(10), "redis sentinel");
  }
  for (const std::string& dir : sentinel_dirs_) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
}

std::string RedisSentinelGroup::url() const {
  std::string out = "redis+sentinel://";
  for (std::size_t i = 0; i < sentinel_ports_.size(); ++i) {
    out += (i > 0 ? "," : "") + std::string("127.0.0.1:") + std::to_string(sentinel_ports_[i]);
  }
  return out + "/" + options_.master_name;
}

StatusOr<std::uint16_t> RedisSentinelGroup::reported_master_port() const {
  Status last = unavailable("no sentinel");
  for (std::uint16_t port : sentinel_ports_) {
    StatusOr<std::string> reply =
        sentinel_cli(port, {"SENTINEL", "get-master-addr-by-name", options_.master_name});
    if (!reply.ok()) {
      last = reply.status();
      continue;
    }
    const std::size_t newline = reply->find('\n');
    if (newline == std::string::npos) continue;
    return static_cast<std::uint16_t>(std::stoi(reply->substr(newline + 1)));
  }
  return last;
}

}  // namespace sluice::test
