// The RateLimitService implementation behind GrpcServer, kept apart so only two files include
// gRPC's generated code.
#pragma once

#include <memory>

#include "sluice/server/grpc/grpc_server.h"

namespace grpc {
class Service;
}

namespace sluice::grpc_server {

// The callback service answering ShouldRateLimit through `limiter`. References must outlive it.
std::unique_ptr<grpc::Service> make_rls_service(service::Limiter& limiter,
                                                const service::PolicyLookup& policies,
                                                RlsOptions options);

}  // namespace sluice::grpc_server
