// Protobuf request bodies (sim/protobuf_body.h): the envelope and the messages of the
// kinds kubectl's typed clients send, encoded here as gogo-protobuf encodes them (every
// by-value field present, empty or not).
#include "sim/protobuf_body.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/api_status.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

std::string varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  return out + static_cast<char>(v);
}
std::string bytes_field(int number, const std::string& value) {
  return varint(static_cast<uint64_t>(number) << 3 | 2) + varint(value.size()) + value;
}
std::string varint_field(int number, uint64_t value) {
  return varint(static_cast<uint64_t>(number) << 3) + varint(value);
}
std::string entry(int number, const std::string& k, const std::string& v) {
  return bytes_field(number, bytes_field(1, k) + bytes_field(2, v));
}

// ObjectMeta as a Go client marshals a fresh object: the by-value fields all present.
std::string object_meta(const std::string& name, const std::string& ns = "") {
  return bytes_field(1, name) + bytes_field(2, "") + bytes_field(3, ns) + bytes_field(4, "") +
         bytes_field(5, "") + bytes_field(6, "") + varint_field(7, 0) +
         bytes_field(8, "") /* zero creationTimestamp */ + entry(11, "team", "vision") +
         entry(12, "note", "");
}

std::string envelope(const std::string& api_version, const std::string& kind,
                     const std::string& raw) {
  const std::string type_meta = bytes_field(1, api_version) + bytes_field(2, kind);
  return std::string("k8s\0", 4) + bytes_field(1, type_meta) + bytes_field(2, raw) +
         bytes_field(3, "") + bytes_field(4, "");
}

TEST(ProtobufBody, a_namespace_decodes_as_its_json_with_empty_scalars_left_out) {
  const std::string ns =
      bytes_field(1, object_meta("foo")) + bytes_field(2, "") + bytes_field(3, "");
  const json got = decode_protobuf_object(envelope("v1", "Namespace", ns));
  const json want = {{"apiVersion", "v1"},
                     {"kind", "Namespace"},
                     {"metadata",
                      {{"name", "foo"},
                       {"creationTimestamp", nullptr},
                       {"labels", {{"team", "vision"}}},
                       {"annotations", {{"note", ""}}}}},
                     {"spec", json::object()},
                     {"status", json::object()}};
  EXPECT_EQ(got, want) << got.dump(2);
}

TEST(ProtobufBody, configmap_secret_and_serviceaccount_fields) {
  const std::string cm = bytes_field(1, object_meta("cfg", "foo")) + entry(2, "a", "b") +
                         entry(2, "empty", "") + entry(3, "bin", std::string("\x00\x01", 2));
  const json c = decode_protobuf_object(envelope("v1", "ConfigMap", cm));
  EXPECT_EQ(c["metadata"]["namespace"], "foo");
  EXPECT_EQ(c["data"], json({{"a", "b"}, {"empty", ""}}));
  EXPECT_EQ(c["binaryData"], json({{"bin", "AAE="}}));
  EXPECT_FALSE(c.contains("immutable"));

  const std::string secret = bytes_field(1, object_meta("s")) + entry(2, "k", "v") +
                             bytes_field(3, "Opaque") + varint_field(5, 1);
  const json s = decode_protobuf_object(envelope("v1", "Secret", secret));
  EXPECT_EQ(s["data"], json({{"k", "dg=="}}));  // []byte is base64 in JSON
  EXPECT_EQ(s["type"], "Opaque");
  EXPECT_EQ(s["immutable"], true);

  // A *bool set to false is kept: automountServiceAccountToken: false means "do not mount".
  const std::string sa = bytes_field(1, object_meta("robot")) +
                         bytes_field(3, bytes_field(1, "pull")) + varint_field(4, 0);
  const json a = decode_protobuf_object(envelope("v1", "ServiceAccount", sa));
  EXPECT_EQ(a["imagePullSecrets"], json::array({{{"name", "pull"}}}));
  EXPECT_EQ(a["automountServiceAccountToken"], false);
}

TEST(ProtobufBody, unknown_kinds_are_415_and_malformed_bodies_400) {
  struct Case {
    std::string what, body;
    int want_code;
  };
  const std::vector<Case> cases = {
      {"a kind the sim has no message for", envelope("apps/v1", "Deployment", ""), 415},
      {"an empty envelope", std::string("k8s\0", 4), 415},
      {"no magic", "{\"kind\":\"Namespace\"}", 400},
      {"a length past the end", std::string("k8s\0", 4) + varint(2 << 3 | 2) + varint(50), 400},
      {"a string field sent as a varint",
       envelope("v1", "Namespace", bytes_field(1, varint_field(1, 7))), 400},
      {"gzip content encoding",
       std::string("k8s\0", 4) +
           bytes_field(1, bytes_field(1, "v1") + bytes_field(2, "Namespace")) +
           bytes_field(3, "gzip"),
       400},
  };
  for (const auto& c : cases) {
    try {
      decode_protobuf_object(c.body);
      ADD_FAILURE() << c.what << ": decoded";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status()["code"], c.want_code) << c.what << ": " << e.status().dump();
    }
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
