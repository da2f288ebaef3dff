// gRPC server reflection (grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo), one
// request at a time: list_services, file_by_filename, file_containing_symbol (each file with
// the files it depends on, transitively), file_containing_extension and
// all_extension_numbers_of_type, answered from protobuf's generated descriptor pool — the protos
// linked into the binary. Pure apart from that pool (which is immutable once built).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"

namespace sluice::grpc_server {

// The serialized ServerReflectionResponse to the serialized ServerReflectionRequest `request`;
// `services` are what list_services names. A symbol or file that is not known is an answer
// (error_response NOT_FOUND), not an error; Internal only for bytes that do not parse.
StatusOr<std::string> reflection_answer(std::string_view request,
                                        const std::vector<std::string>& services);

}  // namespace sluice::grpc_server
