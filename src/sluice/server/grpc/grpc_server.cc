#include "sluice/server/grpc/grpc_server.h"

#include <absl/synchronization/mutex.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/impl/codegen/service_type.h>

#include <chrono>
#include <mutex>

#include "sluice/server/grpc/rls_service.h"

namespace sluice::grpc_server {

namespace {
constexpr char kRlsServiceName[] = "envoy.service.ratelimit.v3.RateLimitService";
}  // namespace

struct GrpcServer::State {
  std::unique_ptr<grpc::Service> rls;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::mutex mutex;  // guards shut_down and the health status against a racing shutdown
  bool shut_down = false;
};

GrpcServer::GrpcServer(std::unique_ptr<State> state) : state_(std::move(state)) {}

GrpcServer::~GrpcServer() { shutdown(0); }

StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::start(GrpcServerOptions options,
                                                        service::Limiter& limiter,
                                                        const service::PolicyLookup& policies) {
  // Process-wide switches of grpc++; both must be set before a builder is made.
  static std::once_flag once;
  std::call_once(once, [] {
    // Debian's abseil is built without NDEBUG, so every absl::Mutex lock inside gRPC feeds a
    // deadlock-detection graph: ~5 % of a call's CPU in perf. It is a debugging aid; turn it off.
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  });
  auto state = std::make_unique<State>();
  state->rls = make_rls_service(limiter, policies, options.rls);
  const std::string address =
      (options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host) +
      ":" + std::to_string(options.port);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &state->port);
  builder.RegisterService(state->rls.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             static_cast<int>(options.max_concurrent_streams));
  state->server = builder.BuildAndStart();
  if (!state->server || state->port == 0) {
    return unavailable("grpc-listen: cannot listen on " + address);
  }
  auto server = std::unique_ptr<GrpcServer>(new GrpcServer(std::move(state)));
  server->set_serving(true);
  return server;
}

std::uint16_t GrpcServer::port() const { return static_cast<std::uint16_t>(state_->port); }

void GrpcServer::set_serving(bool serving) {
  std::lock_guard lock(state_->mutex);
  if (state_->shut_down) return;
  grpc::HealthCheckServiceInterface* health = state_->server->GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus(serving);  // every service, "" included
  health->SetServingStatus(kRlsServiceName, serving);
}

void GrpcServer::shutdown(Micros grace) {
  {
    std::lock_guard lock(state_->mutex);
    if (state_->shut_down) return;
    if (grpc::HealthCheckServiceInterface* health = state_->server->GetHealthCheckService()) {
      health->SetServingStatus(false);
    }
    state_->shut_down = true;
  }
  state_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::microseconds(grace));
  state_->server->Wait();
}

}  // namespace sluice::grpc_server
