#include "sluice/simulate/traffic.h"

namespace sluice::simulate {

std::uint32_t NameTable::intern(std::string_view name) {
  if (auto found = ids_.find(name); found != ids_.end()) return found->second;
  const auto id = static_cast<std::uint32_t>(names_.size());
  const std::string& stored = names_.emplace_back(name);
  ids_.emplace(stored, id);
  return id;
}

}  // namespace sluice::simulate
