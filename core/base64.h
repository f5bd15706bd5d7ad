// Standard base64 (RFC 4648 with padding): how Kubernetes JSON carries []byte fields
// (caBundle, certificate-authority-data, an AdmissionReview's patch).
#pragma once

#include <string>
#include <string_view>

namespace commgate {

std::string base64_encode(std::string_view data);
// Padding required, whitespace ignored. Throws std::invalid_argument ("not valid base64").
std::string base64_decode(std::string_view text);

}  // namespace commgate
