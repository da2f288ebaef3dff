#include "sluice/store/redis/tls_context.h"

namespace sluice::redis::internal {

namespace {

Status file_error(std::string_view option, const std::string& file,
                  const boost::system::error_code& ec) {
  return invalid_argument("redis TLS: " + std::string(option) + " \"" + file +
                          "\": " + ec.message());
}

}  // namespace

StatusOr<std::unique_ptr<asio::ssl::context>> make_tls_context(const TlsOptions& options) {
  if (options.cert_file.empty() != options.key_file.empty()) {
    return invalid_argument("redis TLS: a client certificate needs both cert_file and key_file");
  }
  auto context = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  boost::system::error_code ec;
  context->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                           asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                           asio::ssl::context::no_tlsv1_1,
                       ec);
  if (ec) return internal_error("redis TLS: " + ec.message());
  if (options.ca_file.empty()) {
    context->set_default_verify_paths(ec);
    if (ec) return internal_error("redis TLS: the system's trust store: " + ec.message());
  } else {
    context->load_verify_file(options.ca_file, ec);
    if (ec) return file_error("ca_file", options.ca_file, ec);
  }
  if (!options.cert_file.empty()) {
    context->use_certificate_chain_file(options.cert_file, ec);
    if (ec) return file_error("cert_file", options.cert_file, ec);
    context->use_private_key_file(options.key_file, asio::ssl::context::pem, ec);
    // OpenSSL also checks here that the key belongs to the certificate ("key values mismatch").
    if (ec) return file_error("key_file", options.key_file, ec);
  }
  context->set_verify_mode(asio::ssl::verify_peer);
  return context;
}

}  // namespace sluice::redis::internal
