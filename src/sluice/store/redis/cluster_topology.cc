#include "sluice/store/redis/cluster_topology.h"

#include <charconv>

#include "sluice/store/redis/hash_slot.h"

namespace sluice::redis {

namespace {

Status malformed(std::string_view command, const std::string& what) {
  return invalid_argument("redis: malformed " + std::string(command) + " reply: " + what);
}

// A RESP2 map: a flat array of key, value, key, value… The value under `key`, or null.
const Reply* field(const Reply& map, std::string_view key) {
  if (!map.is_array()) return nullptr;
  const std::vector<Reply>& items = map.elements();
  for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
    if (items[i].is_string() || items[i].is_status()) {
      if (items[i].as_string() == key) return &items[i + 1];
    }
  }
  return nullptr;
}

std::optional<std::int64_t> integer_of(const Reply* reply) {
  if (reply == nullptr) return std::nullopt;
  if (reply->is_integer()) return reply->as_integer();
  if (reply->is_string()) {
    std::int64_t value = 0;
    const std::string& text = reply->as_string();
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error == std::errc() && end == text.data() + text.size()) return value;
  }
  return std::nullopt;
}

std::string text_of(const Reply* reply) {
  return reply != nullptr && (reply->is_string() || reply->is_status()) ? reply->as_string() : "";
}

bool valid_slot(std::int64_t slot) { return slot >= 0 && slot < kClusterSlots; }

std::optional<std::uint16_t> port_of(std::optional<std::int64_t> port) {
  if (!port || *port < 1 || *port > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(*port);
}

}  // namespace

StatusOr<std::vector<SlotRange>> slot_ranges_from_shards(const Reply& reply,
                                                         const NodeAddress& asked, bool tls) {
  static constexpr std::string_view kCommand = "CLUSTER SHARDS";
  if (!reply.is_array()) return malformed(kCommand, "not an array");
  std::vector<SlotRange> ranges;
  for (const Reply& shard : reply.elements()) {
    const Reply* slots = field(shard, "slots");
    const Reply* nodes = field(shard, "nodes");
    if (slots == nullptr || nodes == nullptr || !slots->is_array() || !nodes->is_array()) {
      return malformed(kCommand, "a shard without slots or nodes");
    }
    if (slots->elements().empty()) continue;
    if (slots->elements().size() % 2 != 0) return malformed(kCommand, "an odd slots list");
    std::optional<NodeAddress> master;
    for (const Reply& node : nodes->elements()) {
      if (text_of(field(node, "role")) != "master") continue;
      const Reply* tls_port = tls ? field(node, "tls-port") : nullptr;
      const std::optional<std::uint16_t> port =
          port_of(integer_of(tls_port != nullptr ? tls_port : field(node, "port")));
      if (!port) return malformed(kCommand, "a master without a valid port");
      std::string host = text_of(field(node, "endpoint"));
      if (host.empty() || host == "?") host = text_of(field(node, "ip"));
      if (host.empty()) host = asked.host;
      master = NodeAddress{std::move(host), *port};
    }
    if (!master) continue;  // a shard whose master failed and has no successor yet
    for (std::size_t i = 0; i < slots->elements().size(); i += 2) {
      const std::optional<std::int64_t> first = integer_of(&slots->elements()[i]);
      const std::optional<std::int64_t> last = integer_of(&slots->elements()[i + 1]);
      if (!first || !last || !valid_slot(*first) || !valid_slot(*last) || *first > *last) {
        return malformed(kCommand, "a slot range out of 0-16383");
      }
      ranges.push_back(SlotRange{static_cast<int>(*first), static_cast<int>(*last), *master});
    }
  }
  return ranges;
}

StatusOr<std::vector<SlotRange>> slot_ranges_from_slots(const Reply& reply,
                                                        const NodeAddress& asked) {
  static constexpr std::string_view kCommand = "CLUSTER SLOTS";
  if (!reply.is_array()) return malformed(kCommand, "not an array");
  std::vector<SlotRange> ranges;
  for (const Reply& range : reply.elements()) {
    if (!range.is_array() || range.elements().size() < 3 || !range.elements()[2].is_array() ||
        range.elements()[2].elements().size() < 2) {
      return malformed(kCommand, "a range without a master");
    }
    const std::optional<std::int64_t> first = integer_of(&range.elements()[0]);
    const std::optional<std::int64_t> last = integer_of(&range.elements()[1]);
    if (!first || !last || !valid_slot(*first) || !valid_slot(*last) || *first > *last) {
      return malformed(kCommand, "a slot range out of 0-16383");
    }
    const Reply& master = range.elements()[2];
    const std::optional<std::uint16_t> port = port_of(integer_of(&master.elements()[1]));
    if (!port) return malformed(kCommand, "a master without a valid port");
    std::string host = text_of(&master.elements()[0]);
    if (host.empty() || host == "?") host = asked.host;
    ranges.push_back(
        SlotRange{static_cast<int>(*first), static_cast<int>(*last), {std::move(host), *port}});
  }
  return ranges;
}

std::optional<Redirection> parse_redirection(std::string_view error) {
  Redirection out;
  if (error.starts_with("MOVED ")) {
    out.kind = Redirection::Kind::kMoved;
    error.remove_prefix(6);
  } else if (error.starts_with("ASK ")) {
    out.kind = Redirection::Kind::kAsk;
    error.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  const std::size_t space = error.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::string_view slot = error.substr(0, space);
  const std::string_view address = error.substr(space + 1);
  const auto [slot_end, slot_error] =
      std::from_chars(slot.data(), slot.data() + slot.size(), out.slot);
  if (slot_error != std::errc() || slot_end != slot.data() + slot.size() || !valid_slot(out.slot)) {
    return std::nullopt;
  }
  const std::size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view port = address.substr(colon + 1);
  int value = 0;
  const auto [port_end, port_error] =
      std::from_chars(port.data(), port.data() + port.size(), value);
  if (port_error != std::errc() || port_end != port.data() + port.size() || value < 1 ||
      value > 65535) {
    return std::nullopt;
  }
  std::string_view host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  out.to = NodeAddress{std::string(host), static_cast<std::uint16_t>(value)};
  return out;
}

bool is_retryable_cluster_error(std::string_view error) {
  return error.starts_with("TRYAGAIN") || error.starts_with("CLUSTERDOWN");
}

}  // namespace sluice::redis
