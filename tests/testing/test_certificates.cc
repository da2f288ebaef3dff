#include "testing/test_certificates.h"

#include <fstream>

#include "testing/subprocess.h"

namespace sluice::test {

namespace {

Status make_ca(const std::string& key, const std::string& cert, const std::string& name) {
  return run_checked({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                      "-out", cert, "-days", "2", "-subj", "/CN=" + name})
      .status();
}

// A key and a certificate for `name` signed by the CA, with `extensions` (an openssl extfile).
Status make_signed(const std::string& dir, const std::string& stem, const std::string& name,
                   const std::string& extensions, const std::string& ca_key,
                   const std::string& ca_cert) {
  const std::string key = dir + "/" + stem + ".key";
  const std::string request = dir + "/" + stem + ".csr";
  const std::string ext = dir + "/" + stem + ".ext";
  if (Status status = run_checked({"openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout",
                                   key, "-out", request, "-subj", "/CN=" + name})
                          .status();
      !status.ok()) {
    return status;
  }
  std::ofstream(ext) << extensions << "\n";
  return run_checked({"openssl", "x509", "-req", "-in", request, "-CA", ca_cert, "-CAkey", ca_key,
                      "-CAcreateserial", "-out", dir + "/" + stem + ".crt", "-days", "2",
                      "-extfile", ext})
      .status();
}

}  // namespace

StatusOr<TestCertificates> make_test_certificates(const std::string& dir) {
  TestCertificates out{.ca_cert = dir + "/ca.crt",
                       .server_cert = dir + "/server.crt",
                       .server_key = dir + "/server.key",
                       .client_cert = dir + "/client.crt",
                       .client_key = dir + "/client.key",
                       .other_ca_cert = dir + "/other-ca.crt",
                       .stranger_cert = dir + "/stranger.crt",
                       .stranger_key = dir + "/stranger.key",
                       .garbage = dir + "/garbage.pem"};
  const std::string ca_key = dir + "/ca.key";
  if (Status status = make_ca(ca_key, out.ca_cert, "Sluice Test CA"); !status.ok()) return status;
  const std::string other_ca_key = dir + "/other-ca.key";
  if (Status status = make_ca(other_ca_key, out.other_ca_cert, "Unrelated CA"); !status.ok()) {
    return status;
  }
  if (Status status = make_signed(
          dir, "server", "localhost",
          "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth",
          ca_key, out.ca_cert);
      !status.ok()) {
    return status;
  }
  if (Status status = make_signed(dir, "client", "sluice-test-client",
                                  "extendedKeyUsage=clientAuth", ca_key, out.ca_cert);
      !status.ok()) {
    return status;
  }
  if (Status status = make_signed(dir, "stranger", "sluice-test-stranger",
                                  "extendedKeyUsage=clientAuth", other_ca_key, out.other_ca_cert);
      !status.ok()) {
    return status;
  }
  std::ofstream(out.garbage) << "not a certificate\n";
  return out;
}

}  // namespace sluice::test
