#include "testing/redis_cluster.h"

#include <map>
#include <sstream>
#include <thread>
#include <utility>

#include "testing/subprocess.h"

namespace sluice::test {
namespace {

using Clock = std::chrono::steady_clock;

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

std::string seed_list(const std::vector<std::unique_ptr<RedisServer>>& nodes, std::size_t count) {
  std::string out = "redis+cluster://";
  for (std::size_t i = 0; i < count && i < nodes.size(); ++i) {
    if (i > 0) out += ",";
    out += "127.0.0.1:" + std::to_string(nodes[i]->port());
  }
  return out;
}

// A live master's line of CLUSTER NODES: its port and the slot ranges it serves.
struct MasterLine {
  std::uint16_t port = 0;
  std::vector<std::pair<int, int>> ranges;
};

// CLUSTER NODES: `<id> <ip:port@cport> <flags> <master> <ping> <pong> <epoch> <link> <slot>…`,
// where a slot field is `a-b`, `a`, or `[a->-id]` / `[a-<-id]` while it migrates (skipped: the
// owner still lists it plainly). Sorted by port, so two nodes' views compare as text.
std::vector<MasterLine> masters_in(const std::string& cluster_nodes) {
  std::map<std::uint16_t, MasterLine> masters;
  std::istringstream lines(cluster_nodes);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string field; fields >> field;) f.push_back(field);
    if (f.size() < 9 || f[2].find("master") == std::string::npos ||
        f[2].find("fail") != std::string::npos) {
      continue;
    }
    const std::size_t colon = f[1].rfind(':', f[1].find('@'));
    MasterLine master;
    master.port = static_cast<std::uint16_t>(std::stoi(f[1].substr(colon + 1)));
    for (std::size_t k = 8; k < f.size(); ++k) {
      if (f[k].starts_with("[")) continue;
      const std::size_t dash = f[k].find('-');
      const int first = std::stoi(f[k].substr(0, dash));
      const int last = dash == std::string::npos ? first : std::stoi(f[k].substr(dash + 1));
      master.ranges.emplace_back(first, last);
    }
    masters[master.port] = std::move(master);
  }
  std::vector<MasterLine> out;
  for (auto& [port, master] : masters) out.push_back(std::move(master));
  return out;
}

}  // namespace

StatusOr<std::unique_ptr<RedisCluster>> RedisCluster::start(RedisClusterOptions options) {
  std::unique_ptr<RedisCluster> cluster(new RedisCluster(options));
  const int count = options.masters * (1 + options.replicas_per_master);
  for (int i = 0; i < count; ++i) {
    // The cluster bus listens on its own free port (by default port + 10 000, which may be taken
    // or beyond 65535). A picked port can be taken before redis binds it: the node is started
    // again on new ports, the bus's included (RedisServer::start renews only the client port).
    StatusOr<std::unique_ptr<RedisServer>> server = Status(StatusCode::kInternal, "not started");
    std::uint16_t tls_port = 0;
    for (int attempt = 0; attempt < 5 && !server.ok(); ++attempt) {
      StatusOr<std::uint16_t> bus = RedisServer::pick_free_port();
      if (!bus.ok()) return bus.status();
      RedisServerOptions node;
      node.extra_args = {"--cluster-port", std::to_string(*bus), "--cluster-enabled", "yes",
                         "--cluster-config-file", "nodes.conf", "--cluster-node-timeout",
                         std::to_string(options.node_timeout.count()),
                         "--cluster-require-full-coverage", "no",
                         // A replica of a killed master must not wait for data it cannot get.
                         "--cluster-replica-validity-factor", "0"};
      node.extra_args.insert(node.extra_args.end(), options.extra_args.begin(),
                             options.extra_args.end());
      if (options.tls != nullptr) {
        StatusOr<std::uint16_t> picked = RedisServer::pick_free_port();
        if (!picked.ok()) return picked.status();
        tls_port = *picked;
        node.extra_args.insert(
            node.extra_args.end(),
            {"--tls-port", std::to_string(tls_port), "--tls-cert-file", options.tls->server_cert,
             "--tls-key-file", options.tls->server_key, "--tls-ca-cert-file", options.tls->ca_cert,
             "--tls-auth-clients", "no", "--tls-cluster", "yes", "--tls-replication", "yes"});
      }
      server = RedisServer::start(std::move(node));
    }
    if (!server.ok()) return server.status();
    if (options.tls != nullptr) cluster->tls_ports_.push_back(tls_port);
    cluster->nodes_.push_back(std::move(*server));
  }
  // `timeout`: redis-cli waits for the nodes to join forever when they cannot reach each other.
  std::vector<std::string> create = {"timeout", "60", "redis-cli", "--cluster", "create"};
  for (const auto& node : cluster->nodes_) {
    create.push_back("127.0.0.1:" + std::to_string(node->port()));
  }
  create.insert(create.end(), {"--cluster-replicas", std::to_string(options.replicas_per_master),
                               "--cluster-yes"});
  if (StatusOr<std::string> created = run_checked(create); !created.ok()) {
    return created.status();
  }
  if (Status stable = cluster->wait_until_stable(); !stable.ok()) return stable;
  return cluster;
}

std::string RedisCluster::url() const { return seed_list(nodes_, nodes_.size()); }

std::string RedisCluster::url_with_one_seed() const { return seed_list(nodes_, 1); }

std::string RedisCluster::tls_url() const {
  if (options_.tls == nullptr || tls_ports_.empty()) return "";
  return "rediss+cluster://127.0.0.1:" + std::to_string(tls_ports_[0]) +
         "?tls_ca=" + options_.tls->ca_cert;
}

StatusOr<std::string> RedisCluster::cli(std::size_t i, const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"redis-cli", "-p", std::to_string(nodes_[i]->port())};
  argv.insert(argv.end(), args.begin(), args.end());
  StatusOr<std::string> output = run_checked(argv);
  if (!output.ok()) return output.status();
  return trimmed(*std::move(output));
}

StatusOr<std::uint16_t> RedisCluster::master_of_slot(int slot, std::size_t asking) const {
  StatusOr<std::string> nodes = cli(asking, {"CLUSTER", "NODES"});
  if (!nodes.ok()) return nodes.status();
  for (const MasterLine& master : masters_in(*nodes)) {
    for (const auto& [first, last] : master.ranges) {
      if (slot >= first && slot <= last) return master.port;
    }
  }
  return not_found("no master serves slot " + std::to_string(slot));
}

Status RedisCluster::wait_until_stable(std::chrono::milliseconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  std::string last;
  for (;;) {
    bool ok = true;
    std::string reference;
    for (std::size_t i = 0; i < nodes_.size() && ok; ++i) {
      if (nodes_[i]->pid() == 0 || process_gone(nodes_[i]->pid())) continue;
      StatusOr<std::string> info = cli(i, {"CLUSTER", "INFO"});
      ok = info.ok() && info->find("cluster_state:ok") != std::string::npos;
      if (!ok) {
        last = info.ok() ? *info : info.status().message();
        break;
      }
      // Agreement: every live node lists the same masters for the same slots.
      StatusOr<std::string> nodes = cli(i, {"CLUSTER", "NODES"});
      if (!nodes.ok()) {
        ok = false;
        break;
      }
      std::string view;
      int covered = 0;
      for (const MasterLine& master : masters_in(*nodes)) {
        view += std::to_string(master.port) + "=";
        for (const auto& [from, to] : master.ranges) {
          view += std::to_string(from) + "-" + std::to_string(to) + ",";
          covered += to - from + 1;
        }
        view += ";";
      }
      if (covered != 16384) {
        ok = false;
        last = std::to_string(covered) + " of 16384 slots served: " + view;
        break;
      }
      if (reference.empty()) {
        reference = view;
      } else if (view != reference) {
        ok = false;
        last = "nodes disagree: " + view + " vs " + reference;
      }
    }
    if (ok) return Status();
    if (Clock::now() > deadline) {
      return Status(StatusCode::kDeadlineExceeded, "redis cluster did not settle: " + last);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Status RedisCluster::reshard(std::uint16_t from, std::uint16_t to, int count) const {
  const auto id_of = [&](std::uint16_t port) -> StatusOr<std::string> {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i]->port() == port) return cli(i, {"CLUSTER", "MYID"});
    }
    return not_found("no node on port " + std::to_string(port));
  };
  StatusOr<std::string> from_id = id_of(from);
  if (!from_id.ok()) return from_id.status();
  StatusOr<std::string> to_id = id_of(to);
  if (!to_id.ok()) return to_id.status();
  StatusOr<std::string> moved =
      run_checked({"redis-cli", "--cluster", "reshard", "127.0.0.1:" + std::to_string(from),
                   "--cluster-from", *from_id, "--cluster-to", *to_id, "--cluster-slots",
                   std::to_string(count), "--cluster-yes", "--cluster-pipeline", "10"});
  return moved.status();
}

}  // namespace sluice::test
