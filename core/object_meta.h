// The opening every commgate parser shares (read_document: the document is an object of
// the expected apiVersion and kind, and its metadata), and the parts of
// metav1.ObjectMeta that commgate reads. Everything else in metadata is the apiserver's
// and is kept verbatim by whoever holds the raw object.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "core/object_reader.h"
#include "core/time_format.h"

namespace commgate {

struct ObjectMeta {
  std::string name;
  std::string generate_name;  // metadata.generateName, when set
  std::string namespace_;     // empty for cluster-scoped objects
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::optional<TimePoint> creation_timestamp;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
};

// What a kind's document holds besides apiVersion and kind.
enum class MetadataRule {
  kNameRequired,        // a manifest or a stored object: metadata.name
  kNameOrGenerateName,  // an object under admission: generateName may stand in for the name
  kNone,                // not a Kubernetes object (ProbeResult): no metadata is read
};

// A document opened by read_document. `root` reads the rest of the document; the caller
// finishes with root.reject_unknown_fields() (or not, for forward-compatible kinds).
struct Document {
  ObjectReader root;
  ObjectMeta metadata;
};

// Opens `doc` as a `kind` of `api_version`. A document that is not an object (null, a
// list, a scalar) cannot be read further: that throws ValidationError at once, saying
// what it got ("invalid TrainingJob:\nthe document must be a TrainingJob object, got
// null"). Wrong apiVersion or kind and metadata errors are recorded in `errors`, next to
// the caller's own, so one pass reports them all.
Document read_document(const nlohmann::json& doc, std::string_view api_version,
                       std::string_view kind, FieldErrors& errors,
                       MetadataRule metadata = MetadataRule::kNameRequired);

nlohmann::json object_meta_to_json(const ObjectMeta& meta);

}  // namespace commgate
