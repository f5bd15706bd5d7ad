// The field names of the pod template's most used levels, as Kubernetes 1.32 names them:
// generated from the `properties` of each schema below in its OpenAPI v3 document
// (../shared/fixtures/k8s/openapi-v3-1.32/api_v1.json.gz, kubectl-validate's copy).
// tests/core/pod_template_fields_test.cpp checks every list against that file, and prints
// the list to paste here when one drifts (a newer Kubernetes, a new field).
//
// The TrainingJob CRD keeps spec.template as x-kubernetes-preserve-unknown-fields, so the
// API server stores a typo there (`comand:`) and drops it from the Job it creates: the job
// runs without its command. kubectl's strict field validation refuses such a field in a
// Job; commgate refuses it in a TrainingJob (core/training_job.cpp).
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "core/field_errors.h"

namespace commgate {

inline constexpr std::array<const char*, 2> kPodTemplateSpecFields = {"metadata", "spec"};
inline constexpr std::array<const char*, 15> kObjectMetaFields = {"annotations",
                                                                  "creationTimestamp",
                                                                  "deletionGracePeriodSeconds",
                                                                  "deletionTimestamp",
                                                                  "finalizers",
                                                                  "generateName",
                                                                  "generation",
                                                                  "labels",
                                                                  "managedFields",
                                                                  "name",
                                                                  "namespace",
                                                                  "ownerReferences",
                                                                  "resourceVersion",
                                                                  "selfLink",
                                                                  "uid"};
inline constexpr std::array<const char*, 40> kPodSpecFields = {"activeDeadlineSeconds",
                                                               "affinity",
                                                               "automountServiceAccountToken",
                                                               "containers",
                                                               "dnsConfig",
                                                               "dnsPolicy",
                                                               "enableServiceLinks",
                                                               "ephemeralContainers",
                                                               "hostAliases",
                                                               "hostIPC",
                                                               "hostNetwork",
                                                               "hostPID",
                                                               "hostUsers",
                                                               "hostname",
                                                               "imagePullSecrets",
                                                               "initContainers",
                                                               "nodeName",
                                                               "nodeSelector",
                                                               "os",
                                                               "overhead",
                                                               "preemptionPolicy",
                                                               "priority",
                                                               "priorityClassName",
                                                               "readinessGates",
                                                               "resourceClaims",
                                                               "resources",
                                                               "restartPolicy",
                                                               "runtimeClassName",
                                                               "schedulerName",
                                                               "schedulingGates",
                                                               "securityContext",
                                                               "serviceAccount",
                                                               "serviceAccountName",
                                                               "setHostnameAsFQDN",
                                                               "shareProcessNamespace",
                                                               "subdomain",
                                                               "terminationGracePeriodSeconds",
                                                               "tolerations",
                                                               "topologySpreadConstraints",
                                                               "volumes"};
inline constexpr std::array<const char*, 24> kContainerFields = {"args",
                                                                 "command",
                                                                 "env",
                                                                 "envFrom",
                                                                 "image",
                                                                 "imagePullPolicy",
                                                                 "lifecycle",
                                                                 "livenessProbe",
                                                                 "name",
                                                                 "ports",
                                                                 "readinessProbe",
                                                                 "resizePolicy",
                                                                 "resources",
                                                                 "restartPolicy",
                                                                 "securityContext",
                                                                 "startupProbe",
                                                                 "stdin",
                                                                 "stdinOnce",
                                                                 "terminationMessagePath",
                                                                 "terminationMessagePolicy",
                                                                 "tty",
                                                                 "volumeDevices",
                                                                 "volumeMounts",
                                                                 "workingDir"};
inline constexpr std::array<const char*, 3> kResourceRequirementsFields = {"claims", "limits",
                                                                           "requests"};
inline constexpr std::array<const char*, 3> kEnvVarFields = {"name", "value", "valueFrom"};
inline constexpr std::array<const char*, 5> kContainerPortFields = {"containerPort", "hostIP",
                                                                    "hostPort", "name", "protocol"};
inline constexpr std::array<const char*, 7> kVolumeMountFields = {
    "mountPath",         "mountPropagation", "name",       "readOnly",
    "recursiveReadOnly", "subPath",          "subPathExpr"};

struct KubeSchemaFields {
  const char* schema;  // the OpenAPI component, e.g. "io.k8s.api.core.v1.PodSpec"
  std::span<const char* const> fields;
};

// Every table above with the schema it comes from (for the drift test).
inline constexpr std::array<KubeSchemaFields, 8> kPodTemplateSchemaFields = {{
    KubeSchemaFields{"io.k8s.api.core.v1.PodTemplateSpec", kPodTemplateSpecFields},
    KubeSchemaFields{"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", kObjectMetaFields},
    KubeSchemaFields{"io.k8s.api.core.v1.PodSpec", kPodSpecFields},
    KubeSchemaFields{"io.k8s.api.core.v1.Container", kContainerFields},
    KubeSchemaFields{"io.k8s.api.core.v1.ResourceRequirements", kResourceRequirementsFields},
    KubeSchemaFields{"io.k8s.api.core.v1.EnvVar", kEnvVarFields},
    KubeSchemaFields{"io.k8s.api.core.v1.ContainerPort", kContainerPortFields},
    KubeSchemaFields{"io.k8s.api.core.v1.VolumeMount", kVolumeMountFields},
}};

// Reports every key of a pod template (`path`, e.g. "spec.template") that Kubernetes does
// not name at these levels: the template itself, its metadata, its PodSpec, each container
// and init container, and their resources, env, ports and volumeMounts items. Each at its
// path, "unknown field", with a "did you mean" when a known name is within 2 edits.
// Values of other types are left to the parsers (which report what they read) and to the
// API server, as are the deeper levels (affinity, volumes, probes, securityContext).
void reject_unknown_pod_template_fields(const nlohmann::json& pod_template, const std::string& path,
                                        FieldErrors& errors);

}  // namespace commgate
