// DescriptorShortage: this process nearly out of file descriptors for as long as it lives — the
// soft RLIMIT_NOFILE lowered to just above what is open, the table filled with /dev/null, and
// `room` descriptors left for the test's own clients — so a server in the process finds its
// accepts failing with EMFILE. Ending it closes the fillers and restores the limit.
#pragma once

#include <sys/resource.h>

#include <vector>

namespace sluice::test {

class DescriptorShortage {
 public:
  explicit DescriptorShortage(int room);
  ~DescriptorShortage() { end(); }
  DescriptorShortage(const DescriptorShortage&) = delete;
  DescriptorShortage& operator=(const DescriptorShortage&) = delete;

  // Whether the limit could be read and lowered (when not, nothing was changed).
  bool ok() const { return ok_; }
  // Idempotent.
  void end();

 private:
  rlimit saved_{};
  std::vector<int> fillers_;
  bool ok_ = false;
};

}  // namespace sluice::test
