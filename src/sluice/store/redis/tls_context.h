// The OpenSSL context a TLS Redis client shares across its connections, built from TlsOptions:
// TLS 1.2 or later, the server's certificate verified against the CA file (or the system's trust
// store), and the client certificate when one is given. Internal to the client.
#pragma once

#include <memory>

#include "sluice/status.h"
#include "sluice/store/redis/connection.h"

namespace sluice::redis::internal {

// InvalidArgument naming the option and the file when a file cannot be read or does not hold
// what it should (or the key does not match the certificate: "key values mismatch").
StatusOr<std::unique_ptr<asio::ssl::context>> make_tls_context(const TlsOptions& options);

}  // namespace sluice::redis::internal
