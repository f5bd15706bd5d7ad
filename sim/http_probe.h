// The kubelet's httpGet probe: one GET on a fresh connection, over TLS without verifying
// the certificate when the scheme is HTTPS (as the kubelet's prober does), bounded by the
// probe's timeoutSeconds. A status in 200..399 is success, as upstream counts it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace commgate::sim {

struct HttpProbe {
  std::string host;  // an IP address
  uint16_t port = 0;
  std::string path = "/";
  bool https = false;
};

// Whether the GET answered 200..399 within `timeout`. Never throws.
bool run_http_probe(const HttpProbe& probe, std::chrono::milliseconds timeout);

}  // namespace commgate::sim
