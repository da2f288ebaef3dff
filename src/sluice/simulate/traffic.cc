#include "sluice/simulate/traffic.h"

#include <functional>

namespace sluice::simulate {

std::uint32_t NameTable::intern(std::string_view name) {
  if (slots_.empty()) slots_.assign(1024, 0);
  const std::uint64_t hash = std::hash<std::string_view>{}(name);
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = hash & mask;
  for (; slots_[i] != 0; i = (i + 1) & mask) {
    const std::uint32_t id = slots_[i] - 1;
    if (hashes_[id] == hash && names_[id] == name) return id;
  }
  const auto id = static_cast<std::uint32_t>(names_.size());
  names_.emplace_back(name);
  hashes_.push_back(hash);
  slots_[i] = id + 1;
  if (names_.size() * 2 > slots_.size()) grow();  // at most half full: short probes
  return id;
}

void NameTable::grow() {
  slots_.assign(slots_.size() * 2, 0);
  const std::size_t mask = slots_.size() - 1;
  for (std::uint32_t id = 0; id < names_.size(); ++id) {
    std::size_t i = hashes_[id] & mask;
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = id + 1;
  }
}

}  // namespace sluice::simulate
