#include "kube/api_adapters.h"

#include <stdexcept>

namespace commgate::kube {
namespace {

using nlohmann::json;
using Outcome = LeaseClient::Outcome;

std::string namespace_of(const json& object) {
  if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object())
    return "";
  return object["metadata"].value("namespace", "");
}

std::string name_of(const json& object) {
  if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object())
    return "";
  return object["metadata"].value("name", "");
}

// Runs one call and maps its outcome as the LeaseClient contract says.
template <typename F>
LeaseClient::Reply lease_call(F&& call) {
  LeaseClient::Reply reply;
  try {
    reply.object = call();
    reply.outcome = Outcome::kOk;
  } catch (const ApiError& e) {
    reply.outcome = e.not_found()     ? Outcome::kNotFound
                    : e.code() == 409 ? Outcome::kConflict
                                      : Outcome::kError;
    reply.message = e.what();
  } catch (const std::exception& e) {
    reply.outcome = Outcome::kError;
    reply.message = e.what();
  }
  return reply;
}

LeaseClient::Reply refused(const std::string& why) {
  LeaseClient::Reply reply;
  reply.outcome = Outcome::kError;
  reply.message = why;
  return reply;
}

}  // namespace

std::string ApiLeaseClient::collection(const std::string& ns) {
  return "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases";
}

LeaseClient::Reply ApiLeaseClient::get(const std::string& ns, const std::string& name) {
  return lease_call([&] { return reader_.get(collection(ns) + "/" + name); });
}

LeaseClient::Reply ApiLeaseClient::create(const json& lease) {
  const std::string ns = namespace_of(lease);
  if (ns.empty()) return refused("a Lease to create needs metadata.namespace");
  return lease_call([&] { return writer_.create(collection(ns), lease); });
}

LeaseClient::Reply ApiLeaseClient::update(const json& lease) {
  const std::string ns = namespace_of(lease), name = name_of(lease);
  if (ns.empty() || name.empty())
    return refused("a Lease to update needs metadata.namespace and metadata.name");
  return lease_call([&] { return writer_.update(collection(ns) + "/" + name, lease); });
}

std::string ApiEventSink::collection(const std::string& ns) {
  return "/apis/events.k8s.io/v1/namespaces/" + ns + "/events";
}

bool ApiEventSink::create(const json& event) {
  const std::string ns = namespace_of(event);
  if (ns.empty()) return false;
  try {
    writer_.create(collection(ns), event);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

bool ApiEventSink::patch(const std::string& ns, const std::string& name, const json& merge_patch) {
  try {
    writer_.patch(collection(ns) + "/" + name, PatchType::kMerge, merge_patch);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace commgate::kube
