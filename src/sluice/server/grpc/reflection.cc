#include "sluice/server/grpc/reflection.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <set>

#include "grpc/reflection/v1alpha/reflection.pb.h"

namespace sluice::grpc_server {
namespace {

namespace reflection = grpc::reflection::v1alpha;
using google::protobuf::DescriptorPool;
using google::protobuf::FileDescriptor;

// `file` and, after it, every file it imports (transitively), each once.
void add_with_dependencies(const FileDescriptor* file, std::set<std::string>& seen,
                           reflection::FileDescriptorResponse& out) {
  if (!seen.insert(file->name()).second) return;
  google::protobuf::FileDescriptorProto proto;
  file->CopyTo(&proto);
  out.add_file_descriptor_proto(proto.SerializeAsString());
  for (int i = 0; i < file->dependency_count(); ++i) {
    add_with_dependencies(file->dependency(i), seen, out);
  }
}

void not_found(reflection::ServerReflectionResponse& response, std::string message) {
  reflection::ErrorResponse& error = *response.mutable_error_response();
  error.set_error_code(static_cast<int>(StatusCode::kNotFound));
  error.set_error_message(std::move(message));
}

}  // namespace

StatusOr<std::string> reflection_answer(std::string_view request_bytes,
                                        const std::vector<std::string>& services) {
  reflection::ServerReflectionRequest request;
  if (!request.ParseFromArray(request_bytes.data(), static_cast<int>(request_bytes.size()))) {
    return internal_error("ServerReflectionRequest: the message does not parse");
  }
  const DescriptorPool& pool = *DescriptorPool::generated_pool();
  reflection::ServerReflectionResponse response;
  response.set_valid_host(request.host());
  *response.mutable_original_request() = request;
  std::set<std::string> seen;
  switch (request.message_request_case()) {
    case reflection::ServerReflectionRequest::kListServices:
      for (const std::string& name : services) {
        response.mutable_list_services_response()->add_service()->set_name(name);
      }
      break;
    case reflection::ServerReflectionRequest::kFileByFilename:
      if (const FileDescriptor* file = pool.FindFileByName(request.file_by_filename())) {
        add_with_dependencies(file, seen, *response.mutable_file_descriptor_response());
      } else {
        not_found(response, "no file " + request.file_by_filename());
      }
      break;
    case reflection::ServerReflectionRequest::kFileContainingSymbol:
      if (const FileDescriptor* file =
              pool.FindFileContainingSymbol(request.file_containing_symbol())) {
        add_with_dependencies(file, seen, *response.mutable_file_descriptor_response());
      } else {
        not_found(response, "no symbol " + request.file_containing_symbol());
      }
      break;
    case reflection::ServerReflectionRequest::kFileContainingExtension: {
      const auto& wanted = request.file_containing_extension();
      const auto* type = pool.FindMessageTypeByName(wanted.containing_type());
      const auto* extension =
          type != nullptr ? pool.FindExtensionByNumber(type, wanted.extension_number()) : nullptr;
      if (extension != nullptr) {
        add_with_dependencies(extension->file(), seen,
                              *response.mutable_file_descriptor_response());
      } else {
        not_found(response, "no extension " + std::to_string(wanted.extension_number()) + " of " +
                                wanted.containing_type());
      }
      break;
    }
    case reflection::ServerReflectionRequest::kAllExtensionNumbersOfType: {
      const auto* type = pool.FindMessageTypeByName(request.all_extension_numbers_of_type());
      if (type == nullptr) {
        not_found(response, "no type " + request.all_extension_numbers_of_type());
        break;
      }
      auto& numbers = *response.mutable_all_extension_numbers_response();
      numbers.set_base_type_name(type->full_name());
      std::vector<const google::protobuf::FieldDescriptor*> extensions;
      pool.FindAllExtensions(type, &extensions);
      for (const auto* extension : extensions) numbers.add_extension_number(extension->number());
      break;
    }
    case reflection::ServerReflectionRequest::MESSAGE_REQUEST_NOT_SET: {
      reflection::ErrorResponse& error = *response.mutable_error_response();
      error.set_error_code(static_cast<int>(StatusCode::kInvalidArgument));
      error.set_error_message("the request names no message_request");
      break;
    }
  }
  return response.SerializeAsString();
}

}  // namespace sluice::grpc_server
