// Object uids and AdmissionReview uids: random (version 4) UUIDs in the canonical
// 8-4-4-4-12 form, as kube-apiserver makes them.
#pragma once

#include <cstdint>
#include <string>

namespace commgate::sim {

// The UUID of 128 random bits (`hi`, `lo`), with the version and variant bits set.
std::string format_uuid_v4(uint64_t hi, uint64_t lo);

}  // namespace commgate::sim
