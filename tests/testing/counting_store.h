// CountingStore: a decision port that passes every call to another and counts the acquires asked
// of it, so a test or benchmark can see how many decisions reached the store (the defences in
// front of it answer the rest).
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>
#include <utility>

#include "sluice/store/store.h"

namespace sluice::test {

class CountingStore final : public store::DecisionPort {
 public:
  explicit CountingStore(store::DecisionPort& inner) : inner_(inner) {}
  void acquire(const store::SubjectRef& ref, std::int64_t cost, Done done) override {
    calls.fetch_add(1, std::memory_order_relaxed);
    inner_.acquire(ref, cost, std::move(done));
  }
  void apply_quota(const store::SubjectRef& ref, const store::QuotaRequest& request,
                   Done done) override {
    inner_.apply_quota(ref, request, std::move(done));
  }
  void lease(const store::SubjectRef& ref, store::LeaseOperation operation, std::string_view lease,
             LeaseDone done) override {
    inner_.lease(ref, operation, lease, std::move(done));
  }
  bool answers_in_process() const override { return inner_.answers_in_process(); }

  std::atomic<std::int64_t> calls{0};  // acquires passed on

 private:
  store::DecisionPort& inner_;
};

}  // namespace sluice::test
