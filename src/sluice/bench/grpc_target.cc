#include "sluice/bench/grpc_target.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

namespace sluice::bench {
namespace {

namespace rls = envoy::service::ratelimit::v3;

constexpr std::string_view kPrimeSubject = "sluice-bench-prime";

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

  grpc::Status call(rls::RateLimitService::Stub& stub, std::string_view subject, std::int64_t cost,
                    rls::RateLimitResponse& response) const {
    rls::RateLimitRequest request;
    request.set_domain(options_.domain);
    auto& descriptor = *request.add_descriptors();
    auto& entry = *descriptor.add_entries();
    entry.set_key(options_.descriptor_key);
    entry.set_value(std::string(subject));
    descriptor.mutable_hits_addend()->set_value(static_cast<std::uint64_t>(cost));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::microseconds(options_.request_timeout));
    return stub.ShouldRateLimit(&context, request, &response);
  }

  Outcome decide(rls::RateLimitService::Stub& stub, std::string_view subject) {
    rls::RateLimitResponse response;
    const grpc::Status status = call(stub, subject, options_.cost, response);
    if (!status.ok()) {
      remember(status);
      return {.verdict = Verdict::kError};
    }
    return {.verdict = response.overall_code() == rls::RateLimitResponse::OK ? Verdict::kAllowed
                                                                             : Verdict::kDenied};
  }

  void remember(const grpc::Status& status) {
    if (has_error_.load(std::memory_order_relaxed)) return;
    std::lock_guard lock(error_mu_);
    if (first_error_.empty()) {
      first_error_ =
          "gRPC status " + std::to_string(status.error_code()) + ": " + status.error_message();
    }
    has_error_.store(true, std::memory_order_relaxed);
  }

  std::string first_error() const {
    std::lock_guard lock(error_mu_);
    return first_error_;
  }

 private:
  const GrpcTargetOptions options_;
  std::atomic<bool> has_error_{false};
  mutable std::mutex error_mu_;
  std::string first_error_;
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
      : options_(options), shared_(options), shared_channel_(shared_, connect(options.address)) {}

  Outcome decide(std::string_view subject) override { return shared_channel_.decide(subject); }

  Target& for_thread(int index) override {
    ThreadChannel* view = nullptr;
    {
      std::lock_guard lock(mu_);
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
    const grpc::Status status = shared_.call(*stub, kPrimeSubject, 0, response);
    if (!status.ok()) {
      return Status(static_cast<StatusCode>(status.error_code()), status.error_message());
    }
    if (response.statuses_size() != 1 || !response.statuses(0).has_current_limit()) {
      return not_found("descriptor [{" + options_.descriptor_key + "}] matches no limited policy");
    }
    return {};
  }

 private:
  const GrpcTargetOptions options_;
  Shared shared_;
  ThreadChannel shared_channel_;
  std::mutex mu_;
  std::vector<std::unique_ptr<ThreadChannel>> threads_;  // index = load thread, kept across points
};

}  // namespace

StatusOr<std::unique_ptr<Target>> make_grpc_target(const GrpcTargetOptions& options) {
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
