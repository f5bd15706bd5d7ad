// The order in which Kubernetes prefers an API group's versions: discovery lists them in
// it and names the first the group's preferredVersion (kubectl uses that version for a
// resource named without one: `kubectl get workloads` reads kueue.x-k8s.io/v1beta2, not
// the v1beta1 that a CRD may list first). Modelled on apimachinery's
// pkg/version/helpers.go (CompareKubeAwareVersionStrings) as apiextensions-apiserver's
// customresource_discovery_controller.go sorts a CRD's served versions with it: GA before
// beta before alpha, then the higher major, then the higher minor; versions not of the
// form v<major>[alpha|beta<minor>] after those, in alphabetical order.
#pragma once

#include <string>
#include <vector>

namespace commgate::sim {

// True when Kubernetes prefers version `a` to version `b`.
bool preferred_before(const std::string& a, const std::string& b);

// `versions` in Kubernetes' order of preference (stable for equal strings).
void sort_by_version_priority(std::vector<std::string>& versions);

}  // namespace commgate::sim
