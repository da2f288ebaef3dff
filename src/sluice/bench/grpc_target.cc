#include "sluice/bench/grpc_target.h"

#include <absl/synchronization/mutex.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "sluice/core/mutex.h"
#include "sluice/core/status_macros.h"

namespace sluice::bench {
namespace {

namespace rls = envoy::service::ratelimit::v3;

constexpr std::string_view kPrimeSubject = "sluice-bench-prime";

// A gRPC status as ours: the codes are numbered alike (include/sluice/status.h).
Status from_grpc(const grpc::Status& status) {
  if (status.ok()) return {};
  return {static_cast<StatusCode>(status.error_code()), status.error_message()};
}

std::shared_ptr<grpc::Channel> connect(const std::string& address) {
  grpc::ChannelArguments arguments;
  // A subchannel pool of its own: every channel is its own TCP connection, not one shared by all.
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), arguments);
}

// What every thread's channel shares: the request's fields and the first error for the report.
class Shared {
 public:
  explicit Shared(const GrpcTargetOptions& options) : options_(options) {}

  void fill(rls::RateLimitRequest& request, std::string_view subject, std::int64_t cost) const {
    request.set_domain(options_.domain);
    auto& descriptor = *request.add_descriptors();
    auto& entry = *descriptor.add_entries();
    entry.set_key(options_.descriptor_key);
    entry.set_value(std::string(subject));
    descriptor.mutable_hits_addend()->set_value(static_cast<std::uint64_t>(cost));
  }

  void set_deadline(grpc::ClientContext& context) const {
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::microseconds(options_.request_timeout));
  }

  grpc::Status call(rls::RateLimitService::Stub& stub, std::string_view subject, std::int64_t cost,
                    rls::RateLimitResponse& response) const {
    rls::RateLimitRequest request;
    fill(request, subject, cost);
    grpc::ClientContext context;
    set_deadline(context);
    return stub.ShouldRateLimit(&context, request, &response);
  }

  Outcome outcome(const grpc::Status& status, const rls::RateLimitResponse& response) {
    if (!status.ok()) {
      remember(status);
      return {.verdict = Verdict::kError};
    }
    return {.verdict = response.overall_code() == rls::RateLimitResponse::OK ? Verdict::kAllowed
                                                                             : Verdict::kDenied};
  }

  std::int64_t cost() const { return options_.cost; }

  Outcome decide(rls::RateLimitService::Stub& stub, std::string_view subject) {
    rls::RateLimitResponse response;
    return outcome(call(stub, subject, options_.cost, response), response);
  }

  void remember(const grpc::Status& status) {
    first_error_.remember("gRPC status " + std::to_string(status.error_code()) + ": " +
                          status.error_message());
  }

  std::string first_error() const { return first_error_.text(); }

 private:
  const GrpcTargetOptions options_;
  FirstError first_error_;
};

class ThreadChannel final : public Target {
 public:
  ThreadChannel(Shared& shared, std::shared_ptr<grpc::Channel> channel)
      : shared_(shared),
        channel_(std::move(channel)),
        stub_(rls::RateLimitService::NewStub(channel_)) {}
  Outcome decide(std::string_view subject) override { return shared_.decide(*stub_, subject); }
  grpc::Channel& channel() { return *channel_; }

 private:
  Shared& shared_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<rls::RateLimitService::Stub> stub_;
};

class GrpcTarget final : public Target {
 public:
  explicit GrpcTarget(const GrpcTargetOptions& options)
      : options_(options), shared_(options), shared_channel_(shared_, connect(options.address)) {
    for (int i = 0; i < std::max(1, options.async_channels); ++i) {
      async_stubs_.push_back(rls::RateLimitService::NewStub(connect(options.address)));
    }
  }

  Outcome decide(std::string_view subject) override { return shared_channel_.decide(subject); }

  // --mode async: every caller's requests go through grpc++'s callback API on a few shared
  // channels, as Envoy multiplexes its calls on few HTTP/2 connections; no thread per caller.
  void decide_async(std::string_view subject, OutcomeCallback done) override {
    struct Call {
      grpc::ClientContext context;
      rls::RateLimitRequest request;
      rls::RateLimitResponse response;
      OutcomeCallback done;
    };
    auto* call = new Call;  // deleted by the completion below, which runs exactly once
    shared_.fill(call->request, subject, shared_.cost());
    shared_.set_deadline(call->context);
    call->done = std::move(done);
    rls::RateLimitService::Stub& stub =
        *async_stubs_[next_.fetch_add(1, std::memory_order_relaxed) % async_stubs_.size()];
    stub.async()->ShouldRateLimit(&call->context, &call->request, &call->response,
                                  [this, call](grpc::Status status) {
                                    const Outcome outcome = shared_.outcome(status, call->response);
                                    OutcomeCallback finish = std::move(call->done);
                                    delete call;
                                    finish(outcome);
                                  });
  }

  Target& for_thread(int index) override {
    ThreadChannel* view = nullptr;
    {
      MutexLock lock(mu_);
      const auto slot = static_cast<std::size_t>(index);
      if (threads_.size() <= slot) threads_.resize(slot + 1);
      if (!threads_[slot]) {
        threads_[slot] = std::make_unique<ThreadChannel>(shared_, connect(options_.address));
      }
      view = threads_[slot].get();
    }
    // Connect now, outside the measured time; a failure shows on the first decision.
    (void)view->channel().WaitForConnected(std::chrono::system_clock::now() +
                                           std::chrono::seconds(5));
    return *view;
  }

  std::string first_error() const override { return shared_.first_error(); }

  Status prime() {
    auto stub = rls::RateLimitService::NewStub(connect(options_.address));
    rls::RateLimitResponse response;
    SLUICE_RETURN_IF_ERROR(from_grpc(shared_.call(*stub, kPrimeSubject, 0, response)));
    if (response.statuses_size() != 1 || !response.statuses(0).has_current_limit()) {
      return not_found("descriptor [{" + options_.descriptor_key + "}] matches no limited policy");
    }
    return {};
  }

 private:
  const GrpcTargetOptions options_;
  Shared shared_;
  ThreadChannel shared_channel_;
  Mutex mu_;
  std::vector<std::unique_ptr<ThreadChannel>> threads_
      SLUICE_GUARDED_BY(mu_);  // index = load thread, kept across points
  std::vector<std::unique_ptr<rls::RateLimitService::Stub>> async_stubs_;
  std::atomic<std::uint64_t> next_{0};
};

}  // namespace

StatusOr<std::unique_ptr<Target>> make_grpc_target(const GrpcTargetOptions& options) {
  // As in grpc_server.cc: Debian's abseil checks every Mutex for deadlock cycles otherwise.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  GrpcTargetOptions resolved = options;
  if (resolved.address.starts_with("grpc://")) resolved.address.erase(0, 7);
  if (resolved.address.empty() || resolved.address.find(':') == std::string::npos) {
    return invalid_argument("--url \"" + options.address + "\": expected HOST:PORT");
  }
  auto target = std::make_unique<GrpcTarget>(resolved);
  if (Status status = target->prime(); !status.ok()) {
    return Status(status.code(),
                  resolved.address + ", domain \"" + resolved.domain + "\": " + status.message());
  }
  return std::unique_ptr<Target>(std::move(target));
}

}  // namespace sluice::bench
