// libFuzzer target: any bytes as the body of POST /mutate and POST /validate, through the
// whole HTTP layer (content type, envelope, handlers, response). It must never crash,
// hang or leak, and every answer must be a 200/400/500 with a JSON or text body.
// Built only with clang (docs/webhook.md "Fuzzing"); under GCC the same entry point is
// linked to a replay driver that runs the seed corpus as a unit test.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "tests/webhook/webhook_test_support.h"
#include "webhook/webhook_server.h"

namespace {

using namespace commgate;
using namespace commgate::webhook;

// A strict policy and a measured pool-all, so inputs can reach every decision.
AdmissionService& service() {
  static auto* s = [] {
    auto snapshot = std::make_shared<Snapshot>(webhook::testing::snapshot_of(
        {commgate::testing::a_policy().named("strict").max_comm_share(0.1).build()},
        {webhook::testing::a_profile(1.0, commgate::testing::test_now())}));
    auto source = std::make_shared<StaticPolicySource>(snapshot);
    return new AdmissionService(source, WebhookConfig{},
                                [] { return commgate::testing::test_now(); });
  }();
  return *s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  server::Request request;
  request.method = "POST";
  request.headers.push_back({"Content-Type", "application/json"});
  request.body.assign(reinterpret_cast<const char*>(data), size);
  for (const bool mutate : {true, false}) {
    request.path = request.target = mutate ? "/mutate" : "/validate";
    const server::Response response = service().admit(request, mutate);
    if (response.status != 200 && response.status != 400 && response.status != 500) std::abort();
    if (response.status == 200 && !nlohmann::json::accept(response.body)) std::abort();
  }
  return 0;
}
