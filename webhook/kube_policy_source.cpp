#include "webhook/kube_policy_source.h"

namespace commgate::webhook {

KubePolicySource::KubePolicySource(const kube::ApiClient& client, Options options)
    : cache_(client, std::move(options)) {}

KubePolicySource::~KubePolicySource() {
  stop();
}

std::string KubePolicySource::metrics_text() const {
  return cache_.metrics_text("commgate_webhook");
}

}  // namespace commgate::webhook
