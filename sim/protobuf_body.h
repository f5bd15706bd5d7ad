// Request bodies in kube-apiserver's protobuf encoding (Content-Type
// application/vnd.kubernetes.protobuf), as kubectl v1.32's typed-client commands send them
// (`kubectl create namespace`, `create configmap`, `create secret`, `create
// serviceaccount`): the magic "k8s\0", then a runtime.Unknown (typeMeta, raw,
// contentEncoding, contentType) whose `raw` is the object's generated message.
//
// Decoded into the JSON object the same client would have sent as JSON, for the kinds the
// sim knows the messages of: v1 Namespace, ConfigMap, Secret and ServiceAccount, and
// rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding and ClusterRoleBinding
// (`kubectl create rolebinding`, issue #20 defect 5), and authorization.k8s.io/v1
// SelfSubjectAccessReview (`kubectl auth can-i`), with all of ObjectMeta but managedFields. Scalars
// the Go types hold by value (gogo-protobuf always encodes them) and that the JSON tags omit when
// empty are left out when empty, as the JSON encoding leaves them out; a zero Time is null. Other
// kinds are refused with 415, as kube-apiserver refuses protobuf for custom resources.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace commgate::sim {

inline constexpr const char* kProtobufContentType = "application/vnd.kubernetes.protobuf";

// Throws ApiError: 415 for a kind whose message the sim does not know, 400 for a body
// that is not such an envelope or whose message is malformed.
nlohmann::json decode_protobuf_object(std::string_view body);

}  // namespace commgate::sim
