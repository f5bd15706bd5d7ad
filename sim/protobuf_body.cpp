#include "sim/protobuf_body.h"

#include <cstdint>
#include <map>
#include <string>

#include "core/base64.h"
#include "core/time_format.h"
#include "sim/api_status.h"

namespace commgate::sim {

using nlohmann::json;

namespace {

// The protobuf wire format: varints, and length-delimited fields (strings, bytes,
// embedded messages, map entries). Fixed 32/64-bit fields are skipped (none of the
// messages below has one).
class WireReader {
 public:
  explicit WireReader(std::string_view data) : data_(data) {}
  bool done() const { return pos_ >= data_.size(); }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) throw malformed("truncated varint");
      const auto byte = static_cast<uint8_t>(data_[pos_++]);
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return v;
    }
    throw malformed("varint longer than 10 bytes");
  }
  std::string_view bytes() {
    const uint64_t n = varint();
    if (n > data_.size() - pos_) throw malformed("length-delimited field past the end");
    std::string_view out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  void skip(int wire_type) {
    switch (wire_type) {
      case 0:
        varint();
        return;
      case 1:
        advance(8);
        return;
      case 2:
        bytes();
        return;
      case 5:
        advance(4);
        return;
      default:
        throw malformed("unsupported wire type " + std::to_string(wire_type));
    }
  }
  static ApiError malformed(const std::string& why) {
    return bad_request("the protobuf body could not be decoded: " + why);
  }

 private:
  void advance(std::size_t n) {
    if (n > data_.size() - pos_) throw malformed("fixed-size field past the end");
    pos_ += n;
  }
  std::string_view data_;
  std::size_t pos_ = 0;
};

enum class WireType { kString, kBytes, kInt64, kBool, kTime, kMessage, kStringMap, kBytesMap };

struct WireMessage;
struct WireField {
  const char* name;
  WireType type;
  bool repeated = false;
  // The Go field is a pointer (*bool, *int64): present only when set, zero included.
  // Otherwise an empty scalar is left out, as its JSON tag's omitempty does.
  bool pointer = false;
  const WireMessage* message = nullptr;
};
struct WireMessage {
  std::map<int, WireField> fields;
};

// k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto
const WireMessage kOwnerReference{{{5, {"apiVersion", WireType::kString}},
                                   {1, {"kind", WireType::kString}},
                                   {3, {"name", WireType::kString}},
                                   {4, {"uid", WireType::kString}},
                                   {6, {"controller", WireType::kBool, false, true}},
                                   {7, {"blockOwnerDeletion", WireType::kBool, false, true}}}};
const WireMessage kObjectMeta{
    {{1, {"name", WireType::kString}},
     {2, {"generateName", WireType::kString}},
     {3, {"namespace", WireType::kString}},
     {4, {"selfLink", WireType::kString}},
     {5, {"uid", WireType::kString}},
     {6, {"resourceVersion", WireType::kString}},
     {7, {"generation", WireType::kInt64}},
     {8, {"creationTimestamp", WireType::kTime}},
     {9, {"deletionTimestamp", WireType::kTime, false, true}},
     {10, {"deletionGracePeriodSeconds", WireType::kInt64, false, true}},
     {11, {"labels", WireType::kStringMap}},
     {12, {"annotations", WireType::kStringMap}},
     {13, {"ownerReferences", WireType::kMessage, true, false, &kOwnerReference}},
     {14, {"finalizers", WireType::kString, true}}}};
// k8s.io/api/core/v1/generated.proto
const WireMessage kNamespaceSpec{{{1, {"finalizers", WireType::kString, true}}}};
const WireMessage kNamespaceStatus{{{1, {"phase", WireType::kString}}}};
const WireMessage kNamespace{
    {{1, {"metadata", WireType::kMessage, false, false, &kObjectMeta}},
     {2, {"spec", WireType::kMessage, false, false, &kNamespaceSpec}},
     {3, {"status", WireType::kMessage, false, false, &kNamespaceStatus}}}};
const WireMessage kConfigMap{{{1, {"metadata", WireType::kMessage, false, false, &kObjectMeta}},
                              {4, {"immutable", WireType::kBool, false, true}},
                              {2, {"data", WireType::kStringMap}},
                              {3, {"binaryData", WireType::kBytesMap}}}};
const WireMessage kSecret{{{1, {"metadata", WireType::kMessage, false, false, &kObjectMeta}},
                           {5, {"immutable", WireType::kBool, false, true}},
                           {2, {"data", WireType::kBytesMap}},
                           {4, {"stringData", WireType::kStringMap}},
                           {3, {"type", WireType::kString}}}};
const WireMessage kObjectReference{{{1, {"kind", WireType::kString}},
                                    {2, {"namespace", WireType::kString}},
                                    {3, {"name", WireType::kString}},
                                    {4, {"uid", WireType::kString}},
                                    {5, {"apiVersion", WireType::kString}},
                                    {6, {"resourceVersion", WireType::kString}},
                                    {7, {"fieldPath", WireType::kString}}}};
const WireMessage kLocalObjectReference{{{1, {"name", WireType::kString}}}};
const WireMessage kServiceAccount{
    {{1, {"metadata", WireType::kMessage, false, false, &kObjectMeta}},
     {2, {"secrets", WireType::kMessage, true, false, &kObjectReference}},
     {3, {"imagePullSecrets", WireType::kMessage, true, false, &kLocalObjectReference}},
     {4, {"automountServiceAccountToken", WireType::kBool, false, true}}}};

// k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto
const WireMessage kLabelSelectorRequirement{{{1, {"key", WireType::kString}},
                                             {2, {"operator", WireType::kString}},
                                             {3, {"values", WireType::kString, true}}}};
const WireMessage kLabelSelector{
    {{1, {"matchLabels", WireType::kStringMap}},
     {2, {"matchExpressions", WireType::kMessage, true, false, &kLabelSelectorRequirement}}}};
// k8s.io/api/rbac/v1/generated.proto (`kubectl create role`, `clusterrole`,
// `rolebinding`, `clusterrolebinding`)
const WireMessage kPolicyRule{{{1, {"verbs", WireType::kString, true}},
                               {2, {"apiGroups", WireType::kString, true}},
                               {3, {"resources", WireType::kString, true}},
                               {4, {"resourceNames", WireType::kString, true}},
                               {5, {"nonResourceURLs", WireType::kString, true}}}};
const WireMessage kAggregationRule{
    {{1, {"clusterRoleSelectors", WireType::kMessage, true, false, &kLabelSelector}}}};
const WireMessage kRole{{{1, {"metadata", WireType::kMessage, false, false, &kObjectMeta}},
                         {2, {"rules", WireType::kMessage, true, false, &kPolicyRule}}}};
const WireMessage kClusterRole{
    {{1, {"metadata", WireType::kMessage, false, false, &kObjectMeta}},
     {2, {"rules", WireType::kMessage, true, false, &kPolicyRule}},
     {3, {"aggregationRule", WireType::kMessage, false, false, &kAggregationRule}}}};
const WireMessage kSubject{{{1, {"kind", WireType::kString}},
                            {2, {"apiGroup", WireType::kString}},
                            {3, {"name", WireType::kString}},
                            {4, {"namespace", WireType::kString}}}};
const WireMessage kRoleRef{{{1, {"apiGroup", WireType::kString}},
                            {2, {"kind", WireType::kString}},
                            {3, {"name", WireType::kString}}}};
const WireMessage kRoleBinding{{{1, {"metadata", WireType::kMessage, false, false, &kObjectMeta}},
                                {2, {"subjects", WireType::kMessage, true, false, &kSubject}},
                                {3, {"roleRef", WireType::kMessage, false, false, &kRoleRef}}}};

// k8s.io/api/authorization/v1/generated.proto (`kubectl auth can-i`); the field and label
// selectors of ResourceAttributes (8, 9) are not read.
const WireMessage kResourceAttributes{{{1, {"namespace", WireType::kString}},
                                       {2, {"verb", WireType::kString}},
                                       {3, {"group", WireType::kString}},
                                       {4, {"version", WireType::kString}},
                                       {5, {"resource", WireType::kString}},
                                       {6, {"subresource", WireType::kString}},
                                       {7, {"name", WireType::kString}}}};
const WireMessage kNonResourceAttributes{
    {{1, {"path", WireType::kString}}, {2, {"verb", WireType::kString}}}};
const WireMessage kSelfSubjectAccessReviewSpec{
    {{1, {"resourceAttributes", WireType::kMessage, false, false, &kResourceAttributes}},
     {2, {"nonResourceAttributes", WireType::kMessage, false, false, &kNonResourceAttributes}}}};
const WireMessage kSelfSubjectAccessReview{
    {{1, {"metadata", WireType::kMessage, false, false, &kObjectMeta}},
     {2, {"spec", WireType::kMessage, false, false, &kSelfSubjectAccessReviewSpec}}}};

const std::map<std::string, const WireMessage*> kKinds = {
    {"v1/Namespace", &kNamespace},
    {"v1/ConfigMap", &kConfigMap},
    {"v1/Secret", &kSecret},
    {"v1/ServiceAccount", &kServiceAccount},
    {"rbac.authorization.k8s.io/v1/Role", &kRole},
    {"rbac.authorization.k8s.io/v1/ClusterRole", &kClusterRole},
    {"rbac.authorization.k8s.io/v1/RoleBinding", &kRoleBinding},
    {"rbac.authorization.k8s.io/v1/ClusterRoleBinding", &kRoleBinding},
    {"authorization.k8s.io/v1/SelfSubjectAccessReview", &kSelfSubjectAccessReview}};

json decode_message(std::string_view data, const WireMessage& m, int depth);

// metav1.Time: a zero time is JSON null.
json decode_time(std::string_view data) {
  WireReader r(data);
  int64_t seconds = 0;
  while (!r.done()) {
    const uint64_t key = r.varint();
    if ((key >> 3) == 1 && (key & 7) == 0) {
      seconds = static_cast<int64_t>(r.varint());
    } else {
      r.skip(static_cast<int>(key & 7));
    }
  }
  if (seconds == 0) return nullptr;
  return format_rfc3339(TimePoint(std::chrono::seconds(seconds)));
}

// A map entry: key = 1, value = 2.
std::pair<std::string, std::string> decode_entry(std::string_view data) {
  WireReader r(data);
  std::string key, value;
  while (!r.done()) {
    const uint64_t tag = r.varint();
    const int number = static_cast<int>(tag >> 3), wire = static_cast<int>(tag & 7);
    if (wire == 2 && number == 1) {
      key = std::string(r.bytes());
    } else if (wire == 2 && number == 2) {
      value = std::string(r.bytes());
    } else {
      r.skip(wire);
    }
  }
  return {key, value};
}

json decode_value(WireReader& r, int wire, const WireField& f, int depth) {
  const bool varint = f.type == WireType::kInt64 || f.type == WireType::kBool;
  if (wire != (varint ? 0 : 2))
    throw WireReader::malformed(std::string("field ") + f.name + " has wire type " +
                                std::to_string(wire));
  switch (f.type) {
    case WireType::kString:
      return std::string(r.bytes());
    case WireType::kBytes:
      return base64_encode(r.bytes());
    case WireType::kInt64:
      return static_cast<int64_t>(r.varint());
    case WireType::kBool:
      return r.varint() != 0;
    case WireType::kTime:
      return decode_time(r.bytes());
    case WireType::kMessage:
      return decode_message(r.bytes(), *f.message, depth + 1);
    case WireType::kStringMap:
    case WireType::kBytesMap:
      break;
  }
  auto [key, value] = decode_entry(r.bytes());
  return json::array({key, f.type == WireType::kBytesMap ? base64_encode(value) : value});
}

bool is_empty_scalar(const json& v) {
  return (v.is_string() && v.get<std::string>().empty()) ||
         (v.is_number_integer() && v.get<int64_t>() == 0) || (v.is_boolean() && !v.get<bool>());
}

json decode_message(std::string_view data, const WireMessage& m, int depth) {
  if (depth > 16) throw WireReader::malformed("messages nested too deep");
  WireReader r(data);
  json out = json::object();
  while (!r.done()) {
    const uint64_t tag = r.varint();
    const int number = static_cast<int>(tag >> 3), wire = static_cast<int>(tag & 7);
    auto it = m.fields.find(number);
    if (it == m.fields.end()) {  // unknown to the sim (managedFields): proto skips it
      r.skip(wire);
      continue;
    }
    const WireField& f = it->second;
    json v = decode_value(r, wire, f, depth);
    if (f.type == WireType::kStringMap || f.type == WireType::kBytesMap) {
      out[f.name][v[0].get<std::string>()] = v[1];
    } else if (f.repeated) {
      out[f.name].push_back(std::move(v));
    } else if (!f.pointer && f.type != WireType::kMessage && f.type != WireType::kTime &&
               is_empty_scalar(v)) {
      out.erase(f.name);  // omitempty
    } else {
      out[f.name] = std::move(v);
    }
  }
  return out;
}

}  // namespace

json decode_protobuf_object(std::string_view body) {
  static constexpr std::string_view kMagic("k8s\0", 4);
  if (body.substr(0, 4) != kMagic)
    throw bad_request(
        "the protobuf body could not be decoded: it does not start with \"k8s\\x00\"");
  WireReader r(body.substr(4));
  std::string api_version, kind, encoding, content_type;
  std::string_view raw;
  while (!r.done()) {
    const uint64_t tag = r.varint();
    const int number = static_cast<int>(tag >> 3), wire = static_cast<int>(tag & 7);
    if (wire != 2) {
      r.skip(wire);
      continue;
    }
    const std::string_view value = r.bytes();
    if (number == 1) {  // TypeMeta
      WireReader t(value);
      while (!t.done()) {
        const uint64_t ttag = t.varint();
        if ((ttag & 7) != 2) {
          t.skip(static_cast<int>(ttag & 7));
          continue;
        }
        const std::string_view s = t.bytes();
        if ((ttag >> 3) == 1) api_version = s;
        if ((ttag >> 3) == 2) kind = s;
      }
    } else if (number == 2) {
      raw = value;
    } else if (number == 3) {
      encoding = value;
    } else if (number == 4) {
      content_type = value;
    }
  }
  if (!encoding.empty())
    throw bad_request("the protobuf body could not be decoded: contentEncoding \"" + encoding +
                      "\" is not supported");
  auto known = kKinds.find(api_version + "/" + kind);
  if (known == kKinds.end())
    throw unsupported_media_type(kProtobufContentType + std::string(" (") +
                                     (api_version.empty() ? "" : api_version + ", Kind=") + kind +
                                     ")",
                                 "application/json, application/yaml; protobuf for v1 "
                                 "Namespace, ConfigMap, Secret and ServiceAccount, and "
                                 "rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding "
                                 "and ClusterRoleBinding, and authorization.k8s.io/v1 "
                                 "SelfSubjectAccessReview");
  json object = decode_message(raw, *known->second, 0);
  json out = {{"kind", kind}, {"apiVersion", api_version}};
  out.update(object);
  return out;
}

}  // namespace commgate::sim
