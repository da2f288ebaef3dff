// The server's TLS context (HttpServerOptions::tls): TLS 1.2 and later, forward-secret AEAD
// ciphers, optional client certificates — made once at start from PEM files.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "sluice/server/http/server.h"
#include "sluice/status.h"

namespace sluice::http {

// The context for `tls`. InvalidArgument naming the setting (tls_cert, tls_key, tls_client_ca)
// when a file cannot be read, is not PEM, or the key does not match the certificate.
StatusOr<std::shared_ptr<boost::asio::ssl::context>> make_tls_context(const TlsOptions& tls);

// The reason OpenSSL gives for the last failure (the asio error_code's message is often only
// "asio.ssl error").
std::string openssl_reason(const boost::system::error_code& ec);

}  // namespace sluice::http
