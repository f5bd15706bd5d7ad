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
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
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

enum class Type { kString, kBytes, kInt64, kBool, kTime, kMessage, kStringMap, kBytesMap };

struct Message;
struct Field {
  const char* name;
  Type type;
  bool repeated = false;
  // The Go field is a pointer (*bool, *int64): present only when set, zero included.
  // Otherwise an empty scalar is left out, as its JSON tag's omitempty does.
  bool pointer = false;
  const Message* message = nullptr;
};
struct Message {
  std::map<int, Field> fields;
};

// k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto
const Message kOwnerReference{{{5, {"apiVersion", Type::kString}},
                               {1, {"kind", Type::kString}},
                               {3, {"name", Type::kString}},
                               {4, {"uid", Type::kString}},
                               {6, {"controller", Type::kBool, false, true}},
                               {7, {"blockOwnerDeletion", Type::kBool, false, true}}}};
const Message kObjectMeta{{{1, {"name", Type::kString}},
                           {2, {"generateName", Type::kString}},
                           {3, {"namespace", Type::kString}},
                           {4, {"selfLink", Type::kString}},
                           {5, {"uid", Type::kString}},
                           {6, {"resourceVersion", Type::kString}},
                           {7, {"generation", Type::kInt64}},
                           {8, {"creationTimestamp", Type::kTime}},
                           {9, {"deletionTimestamp", Type::kTime, false, true}},
                           {10, {"deletionGracePeriodSeconds", Type::kInt64, false, true}},
                           {11, {"labels", Type::kStringMap}},
                           {12, {"annotations", Type::kStringMap}},
                           {13, {"ownerReferences", Type::kMessage, true, false, &kOwnerReference}},
                           {14, {"finalizers", Type::kString, true}}}};
// k8s.io/api/core/v1/generated.proto
const Message kNamespaceSpec{{{1, {"finalizers", Type::kString, true}}}};
const Message kNamespaceStatus{{{1, {"phase", Type::kString}}}};
const Message kNamespace{{{1, {"metadata", Type::kMessage, false, false, &kObjectMeta}},
                          {2, {"spec", Type::kMessage, false, false, &kNamespaceSpec}},
                          {3, {"status", Type::kMessage, false, false, &kNamespaceStatus}}}};
const Message kConfigMap{{{1, {"metadata", Type::kMessage, false, false, &kObjectMeta}},
                          {4, {"immutable", Type::kBool, false, true}},
                          {2, {"data", Type::kStringMap}},
                          {3, {"binaryData", Type::kBytesMap}}}};
const Message kSecret{{{1, {"metadata", Type::kMessage, false, false, &kObjectMeta}},
                       {5, {"immutable", Type::kBool, false, true}},
                       {2, {"data", Type::kBytesMap}},
                       {4, {"stringData", Type::kStringMap}},
                       {3, {"type", Type::kString}}}};
const Message kObjectReference{{{1, {"kind", Type::kString}},
                                {2, {"namespace", Type::kString}},
                                {3, {"name", Type::kString}},
                                {4, {"uid", Type::kString}},
                                {5, {"apiVersion", Type::kString}},
                                {6, {"resourceVersion", Type::kString}},
                                {7, {"fieldPath", Type::kString}}}};
const Message kLocalObjectReference{{{1, {"name", Type::kString}}}};
const Message kServiceAccount{
    {{1, {"metadata", Type::kMessage, false, false, &kObjectMeta}},
     {2, {"secrets", Type::kMessage, true, false, &kObjectReference}},
     {3, {"imagePullSecrets", Type::kMessage, true, false, &kLocalObjectReference}},
     {4, {"automountServiceAccountToken", Type::kBool, false, true}}}};

const std::map<std::string, const Message*> kKinds = {{"v1/Namespace", &kNamespace},
                                                      {"v1/ConfigMap", &kConfigMap},
                                                      {"v1/Secret", &kSecret},
                                                      {"v1/ServiceAccount", &kServiceAccount}};

json decode_message(std::string_view data, const Message& m, int depth);

// metav1.Time: a zero time is JSON null.
json decode_time(std::string_view data) {
  Reader r(data);
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
  Reader r(data);
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

json decode_value(Reader& r, int wire, const Field& f, int depth) {
  const bool varint = f.type == Type::kInt64 || f.type == Type::kBool;
  if (wire != (varint ? 0 : 2))
    throw Reader::malformed(std::string("field ") + f.name + " has wire type " +
                            std::to_string(wire));
  switch (f.type) {
    case Type::kString:
      return std::string(r.bytes());
    case Type::kBytes:
      return base64_encode(r.bytes());
    case Type::kInt64:
      return static_cast<int64_t>(r.varint());
    case Type::kBool:
      return r.varint() != 0;
    case Type::kTime:
      return decode_time(r.bytes());
    case Type::kMessage:
      return decode_message(r.bytes(), *f.message, depth + 1);
    case Type::kStringMap:
    case Type::kBytesMap:
      break;
  }
  auto [key, value] = decode_entry(r.bytes());
  return json::array({key, f.type == Type::kBytesMap ? base64_encode(value) : value});
}

bool is_empty_scalar(const json& v) {
  return (v.is_string() && v.get<std::string>().empty()) ||
         (v.is_number_integer() && v.get<int64_t>() == 0) || (v.is_boolean() && !v.get<bool>());
}

json decode_message(std::string_view data, const Message& m, int depth) {
  if (depth > 16) throw Reader::malformed("messages nested too deep");
  Reader r(data);
  json out = json::object();
  while (!r.done()) {
    const uint64_t tag = r.varint();
    const int number = static_cast<int>(tag >> 3), wire = static_cast<int>(tag & 7);
    auto it = m.fields.find(number);
    if (it == m.fields.end()) {  // unknown to the sim (managedFields): proto skips it
      r.skip(wire);
      continue;
    }
    const Field& f = it->second;
    json v = decode_value(r, wire, f, depth);
    if (f.type == Type::kStringMap || f.type == Type::kBytesMap) {
      out[f.name][v[0].get<std::string>()] = v[1];
    } else if (f.repeated) {
      out[f.name].push_back(std::move(v));
    } else if (!f.pointer && f.type != Type::kMessage && f.type != Type::kTime &&
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
  Reader r(body.substr(4));
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
      Reader t(value);
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
                                 "Namespace, ConfigMap, Secret and ServiceAccount");
  json object = decode_message(raw, *known->second, 0);
  json out = {{"kind", kind}, {"apiVersion", api_version}};
  out.update(object);
  return out;
}

}  // namespace commgate::sim
