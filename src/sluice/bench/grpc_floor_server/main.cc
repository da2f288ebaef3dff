// The floor under the gRPC front end's cost (docs/benchmarks.md, "gRPC"): a RateLimitService
// built as sluice's is (grpc++'s callback API, the same generated code and process switches)
// that answers every ShouldRateLimit with OK at once — no policy, no decision. What it spends per
// call is what grpc++ itself spends; bench/grpc_server.sh loads it beside `sluice serve`. A
// program of its own: its main prints its usage and failures itself.
//   grpc_floor_server PORT      (listens on 127.0.0.1:PORT until killed)
#include <absl/synchronization/mutex.h>
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <string>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"

namespace {

namespace rls = envoy::service::ratelimit::v3;

class AlwaysOk final : public rls::RateLimitService::CallbackService {
  grpc::ServerUnaryReactor* ShouldRateLimit(grpc::CallbackServerContext* context,
                                            const rls::RateLimitRequest* /*request*/,
                                            rls::RateLimitResponse* response) override {
    response->set_overall_code(rls::RateLimitResponse::OK);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: grpc_floor_server PORT\n");
    return 2;
  }
  // As GrpcServer::start: Debian's abseil otherwise tracks every lock for deadlock detection.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  AlwaysOk service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(std::string("127.0.0.1:") + argv[1], grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::fprintf(stderr, "grpc_floor_server: cannot listen on 127.0.0.1:%s\n", argv[1]);
    return 1;
  }
  server->Wait();
}
