// TestCertificates: a throwaway PKI for TLS tests, made with the `openssl` command line in a
// directory the caller owns: a CA, a server certificate for localhost and 127.0.0.1 signed by
// it, a client certificate signed by it, an unrelated second CA with a client certificate of its
// own (for "wrong CA" cases), and a file that is not PEM at all.
// Keys are RSA 2048, valid for two days.
#pragma once

#include <string>

#include "sluice/status.h"

namespace sluice::test {

struct TestCertificates {
  std::string ca_cert;  // the CA that signed server_* and client_*
  std::string
      server_cert;  // CN localhost; SAN DNS:localhost, IP:127.0.0.1; also a client (cluster bus)
  std::string server_key;
  std::string client_cert;  // CN sluice-test-client
  std::string client_key;
  std::string other_ca_cert;  // a CA that signed only stranger_*
  std::string stranger_cert;  // CN sluice-test-stranger, a client certificate of other_ca
  std::string stranger_key;
  std::string garbage;  // a text file that is neither a certificate nor a key
};

// Writes the files into `dir` (which must exist) and returns their paths.
StatusOr<TestCertificates> make_test_certificates(const std::string& dir);

}  // namespace sluice::test
