// The vocabulary of back-testing (docs/backtesting.md): one recorded request (Event), and the
// tables that give the strings it names — subjects, policies, apps — small dense ids, so a replay
// keeps its per-subject state in arrays indexed by id rather than in hash maps.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/time.h"

namespace sluice::simulate {

// "No policy / no app named": the event applies to every policy / to any app.
inline constexpr std::uint32_t kUnnamed = std::numeric_limits<std::uint32_t>::max();

// One decision request as recorded or imported. Ids index the TrafficNames it was read with.
struct Event {
  Micros time = 0;  // µs since the Unix epoch
  std::uint32_t subject = 0;
  std::uint32_t policy = kUnnamed;
  std::uint32_t app = kUnnamed;
  std::int64_t cost = 1;  // >= 0; 0 peeks
};

// Interns strings to ids 0, 1, 2, ... in order of first sight. Ids and the views name() returns
// stay valid for the table's life. Not thread-safe.
//
// Open addressing over ids rather than std::unordered_map: a JSON lines replay interns every
// line's subject, and a profile of 100 000 subjects showed the map's node walk as a third of
// the reader's time; here a lookup reads a dense slot array and the id's hash before comparing.
class NameTable {
 public:
  std::uint32_t intern(std::string_view name);
  std::string_view name(std::uint32_t id) const { return names_[id]; }
  std::size_t size() const { return names_.size(); }

 private:
  void grow();

  std::deque<std::string> names_;      // by id; a deque never moves its elements
  std::vector<std::uint64_t> hashes_;  // by id
  std::vector<std::uint32_t> slots_;   // id + 1, or 0 for empty; size a power of two
};

struct TrafficNames {
  NameTable subjects;
  NameTable policies;
  NameTable apps;
};

}  // namespace sluice::simulate
