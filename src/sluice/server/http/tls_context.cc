#include "sluice/server/http/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <fstream>
#include <utility>  // before Asio: Boost 1.74 uses std::exchange without it (GCC 12)

#include "sluice/core/status_macros.h"

namespace sluice::http {

namespace asio = boost::asio;
using error_code = boost::system::error_code;

std::string openssl_reason(const error_code& ec) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return ec.message();
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

namespace {

// A readable file, or an error naming the setting and the reason (before OpenSSL, whose reasons
// for a missing file are obscure).
Status readable(std::string_view setting, const std::string& path) {
  if (path.empty()) return invalid_argument(std::string(setting) + ": must name a PEM file");
  std::ifstream file(path);
  if (!file) {
    return invalid_argument(std::string(setting) + " " + path +
                            ": cannot be read: " + std::strerror(errno));
  }
  return Status();
}

}  // namespace

// TLS 1.2 and later; for TLS 1.2 only ECDHE key exchange with AEAD ciphers (TLS 1.3's suites
// are all of that kind already); no compression, no renegotiation.
StatusOr<std::shared_ptr<asio::ssl::context>> make_tls_context(const TlsOptions& tls) {
  SLUICE_RETURN_IF_ERROR(readable("tls_cert", tls.cert_file));
  SLUICE_RETURN_IF_ERROR(readable("tls_key", tls.key_file));
  if (!tls.client_ca_file.empty()) {
    SLUICE_RETURN_IF_ERROR(readable("tls_client_ca", tls.client_ca_file));
  }
  if (tls.hsts_max_age < 0) return invalid_argument("hsts_max_age: must not be negative");
  ERR_clear_error();
  auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  SSL_CTX* native = context->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(
      native, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_cipher_list(native,
                          "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                          "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                          "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305");
  error_code ec;
  if (context->use_certificate_chain_file(tls.cert_file, ec); ec) {
    return invalid_argument("tls_cert " + tls.cert_file +
                            ": not a PEM certificate chain: " + openssl_reason(ec));
  }
  context->use_private_key_file(tls.key_file, asio::ssl::context::pem, ec);
  // Asio took OpenSSL's error code off its queue into `ec`.
  const bool mismatch =
      ec && ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH;
  if (ec && !mismatch) {
    return invalid_argument("tls_key " + tls.key_file +
                            ": not an unencrypted PEM private key: " + openssl_reason(ec));
  }
  if (ec || SSL_CTX_check_private_key(native) != 1) {
    ERR_clear_error();
    return invalid_argument("tls_key " + tls.key_file + ": does not match the certificate in " +
                            tls.cert_file);
  }
  if (!tls.client_ca_file.empty()) {
    if (context->load_verify_file(tls.client_ca_file, ec); ec) {
      return invalid_argument("tls_client_ca " + tls.client_ca_file +
                              ": not a PEM CA certificate: " + openssl_reason(ec));
    }
    // Tell clients which CAs are accepted, so they pick the right certificate.
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(tls.client_ca_file.c_str());
    if (names == nullptr) {
      ERR_clear_error();
      return invalid_argument("tls_client_ca " + tls.client_ca_file + ": holds no certificate");
    }
    SSL_CTX_set_client_CA_list(native, names);
    context->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert, ec);
  }
  ERR_clear_error();
  return context;
}

}  // namespace sluice::http
