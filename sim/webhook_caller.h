// The HTTPS client with which the simulated API server calls admission webhooks: one POST
// per call on a fresh connection, TLS 1.2+, the server certificate verified against the
// webhook configuration's caBundle and the service's DNS name (SNI and hostname check),
// as kube-apiserver's webhook client does, while the TCP connection goes to the address a
// test registered for that name (there is no cluster DNS). Synchronous; the whole call is
// bounded by the webhook's timeout.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace commgate::sim {

struct WebhookEndpoint {
  std::string url;           // as messages name it: "https://svc.ns.svc:443/validate?timeout=10s"
  std::string connect_host;  // where the TCP connection goes: "127.0.0.1"
  uint16_t connect_port = 0;
  std::string server_name;  // SNI and the name the certificate must carry
  std::string target;       // path and query: "/validate?timeout=10s"
  std::string ca_pem;       // the caBundle, decoded; "" trusts the system's roots
};

struct WebhookReply {
  int status = 0;
  std::string body;
};

// A call that did not produce an HTTP response: the message reads as Go's net/http error
// does in kube-apiserver's messages (`Post "<url>": <why>`).
class WebhookCallError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// POSTs `body` (an AdmissionReview, application/json). Throws WebhookCallError on a
// connection, TLS or timeout failure; any HTTP status is returned.
WebhookReply post_webhook(const WebhookEndpoint& endpoint, const std::string& body,
                          std::chrono::milliseconds timeout);

}  // namespace commgate::sim
