#include "testing/descriptor_shortage.h"

#include <fcntl.h>
#include <unistd.h>

namespace sluice::test {

namespace {

int open_null() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

}  // namespace

DescriptorShortage::DescriptorShortage(int room) {
  if (::getrlimit(RLIMIT_NOFILE, &saved_) != 0) return;
  // A soft limit just above what is open, so filling the table is quick.
  const int highest = open_null();
  if (highest < 0) return;
  ::close(highest);
  rlimit low = saved_;
  low.rlim_cur = static_cast<rlim_t>(highest + 64);
  if (::setrlimit(RLIMIT_NOFILE, &low) != 0) return;
  ok_ = true;
  for (int fd = open_null(); fd >= 0; fd = open_null()) fillers_.push_back(fd);
  for (int i = 0; i < room && !fillers_.empty(); ++i) {
    ::close(fillers_.back());
    fillers_.pop_back();
  }
}

void DescriptorShortage::end() {
  for (int fd : fillers_) ::close(fd);
  fillers_.clear();
  if (ok_) ::setrlimit(RLIMIT_NOFILE, &saved_);
  ok_ = false;
}

}  // namespace sluice::test
