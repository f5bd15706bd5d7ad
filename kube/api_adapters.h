// The leader election's LeaseClient and the event recorder's EventSink over the seams of
// kube/client.h, so production passes an HttpClient and tests pass the FakeClient: the
// contracts in docs/kube-client.md ("Leader election", "Events").
// - ApiLeaseClient: GET, POST and PUT on
//   /apis/coordination.k8s.io/v1/namespaces/NS/leases[/NAME]; 404 -> kNotFound,
//   409 (AlreadyExists on create, Conflict on update) -> kConflict, any other error
//   (ApiError or transport) -> kError with its message. Bound each call with the client's
//   request timeout (ApiClient::Options::request_timeout), well under the lease's slack.
// - ApiEventSink: POST and merge-PATCH on /apis/events.k8s.io/v1/namespaces/NS/events;
//   false on any error (the recorder counts and retries on the next occurrence).
#pragma once

#include <string>

#include "kube/client.h"
#include "kube/event_recorder.h"
#include "kube/leader_election.h"

namespace commgate::kube {

class ApiLeaseClient final : public LeaseClient {
 public:
  // Both must outlive this.
  ApiLeaseClient(const Reader& reader, Writer& writer) : reader_(reader), writer_(writer) {}

  Reply get(const std::string& ns, const std::string& name) override;
  Reply create(const nlohmann::json& lease) override;
  Reply update(const nlohmann::json& lease) override;

  static std::string collection(const std::string& ns);

 private:
  const Reader& reader_;
  Writer& writer_;
};

class ApiEventSink final : public EventSink {
 public:
  explicit ApiEventSink(Writer& writer) : writer_(writer) {}

  bool create(const nlohmann::json& event) override;
  bool patch(const std::string& ns, const std::string& name,
             const nlohmann::json& merge_patch) override;

  static std::string collection(const std::string& ns);

 private:
  Writer& writer_;
};

}  // namespace commgate::kube
