// Embedding Sluice: three payments a minute per customer, decided in this process (memory:) or
// on a Redis every instance shares. Usage: embed [memory: | redis://HOST:PORT]
#include <sluice/client.h>

#include <iostream>

int main(int argc, char** argv) {
  sluice::StatusOr<sluice::Client> client = sluice::Client::open({
      .store = argc > 1 ? argv[1] : "memory:",
      .app = "checkout",
      .policy_text = "name: payments\n"
                     "apps: [checkout]\n"
                     "limits: [{algorithm: token_bucket, capacity: 3, refill: 3, period: 1m}]\n",
  });
  if (!client.ok()) {
    std::cerr << "cannot open: " << client.status().to_string() << "\n";
    return 2;
  }
  for (int request = 1; request <= 4; ++request) {
    sluice::StatusOr<sluice::Decision> decision = client->try_acquire("payments", "customer-42");
    if (!decision.ok()) {
      std::cerr << "error: " << decision.status().to_string() << "\n";
      return 2;
    }
    const sluice::algorithm::Verdict& verdict = decision->verdict;
    std::cout << "payment " << request << ": " << (verdict.allowed ? "allowed" : "denied") << ", "
              << verdict.remaining << " left";
    if (verdict.retry_after) std::cout << ", retry in " << *verdict.retry_after / 1000 << " ms";
    if (decision->degraded) std::cout << " (store unreachable: decided by the failure mode)";
    std::cout << "\n";
  }
}
