// AdmissionReview (admission.k8s.io/v1, and v1beta1 which has the same shape): the
// request the apiserver sends and the response the webhook returns. Handlers see only the
// parsed AdmissionRequest and build an AdmissionResponse with the helpers below; the HTTP
// layer (webhook_server.h) owns the envelope, the uid echo and every malformed case.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/decision.h"
#include "core/field_errors.h"
#include "core/training_job.h"

namespace commgate::webhook {

// The AdmissionReview versions the webhook reads; it answers in the request's.
inline constexpr const char* kAdmissionV1 = "admission.k8s.io/v1";
inline constexpr const char* kAdmissionV1beta1 = "admission.k8s.io/v1beta1";

struct GroupVersionResource {
  std::string group, version, resource;
  // commgate's own resource `name` (group commgate.io, any version): a `trainingjobs` of
  // another API group is not a TrainingJob.
  bool is_commgate(std::string_view name) const {
    return group == "commgate.io" && resource == name;
  }
};

struct UserInfo {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
};

struct AdmissionRequest {
  std::string uid;
  std::string api_version;  // of the envelope: the response echoes it
  std::string kind;         // request.kind.kind ("TrainingJob", "Scale", "CommPolicy")
  GroupVersionResource resource;
  std::string sub_resource;  // "", "scale", "status"
  std::string name;
  std::string namespace_;
  std::string operation;  // CREATE | UPDATE | DELETE | CONNECT
  UserInfo user_info;
  nlohmann::json object;      // null for DELETE
  nlohmann::json old_object;  // null for CREATE
  bool dry_run = false;
};

struct JsonPatchOp {
  std::string op;    // add | replace | remove
  std::string path;  // JSON pointer
  nlohmann::json value;
};

// status.details of a refusal, as kube-apiserver's errors.NewInvalid writes it for a
// TrainingJob that fails validation: {name, group, kind, causes[{reason, message, field}]}.
// kubectl shows a 422 Invalid refusal only through its causes: `kubectl edit` lists them as
// `# * <field>: <message>` above the reopened editor, `kubectl apply` prints
// `The <kind> "<name>" is invalid: * <field>: <message>` (issue #11).
struct StatusCause {
  std::string reason;  // FieldValueInvalid
  std::string message;
  std::string field;  // e.g. spec.numNodes
};
struct StatusDetails {
  std::string name;   // the request's name
  std::string group;  // commgate.io
  std::string kind;   // the Kind (TrainingJob), as NewInvalid writes it
  std::vector<StatusCause> causes;
};

struct AdmissionResponse {
  bool allowed = true;
  int code = 0;        // status.code when denied (403 policy, 422 invalid, 400 bad request)
  std::string reason;  // status.reason (Forbidden, Invalid, BadRequest)
  std::string message;
  // Written as status.details when a refusal has causes (invalid(ValidationError) and
  // invalid(field, message) add them; with_request_details fills name, group and kind).
  StatusDetails details;
  std::vector<JsonPatchOp> patch;
  std::vector<std::string> warnings;
  std::map<std::string, std::string> audit_annotations;
  // For metrics: the commgate decision this response carries ("Admit", "Gate", ... or
  // "Invalid", "Bypass", "None" when no decision was made).
  std::string decision = "None";
};

// The `decision` a commgate decision is counted as: its action ("Admit", "Downsize", ...),
// or "Exempt" for an admission of an exempt requester (reason Exempt), as docs/webhook.md
// lists them.
std::string decision_label(const std::string& action, const std::string& reason);

// Builders, so handlers read as what they answer.
AdmissionResponse allowed();
AdmissionResponse denied(std::string message, int code = 403);
// 422, reason Invalid, one cause per field error; the message is the error's what().
AdmissionResponse invalid(const ValidationError& error);
// 422, reason Invalid: "<field>: <message>", with that one cause.
AdmissionResponse invalid(std::string field, std::string message);
// Names the object a refusal with causes is about (details.name, group, kind), as
// kube-apiserver does: the request's name, its resource's group and its Kind (a Scale of
// the scale subresource is autoscaling's). Changes nothing in a response without causes.
AdmissionResponse with_request_details(AdmissionResponse response, const AdmissionRequest& request);
AdmissionResponse patched(std::vector<JsonPatchOp> ops);
AdmissionResponse with_warnings(AdmissionResponse response, std::vector<std::string> warnings);
// `part`.replicas ("spec" or "status") of the autoscaling/v1 Scale a scale subresource's
// request carries: 0 when absent (the API server omits replicas: 0), nullopt when not an
// integer (`why` says so).
std::optional<int64_t> scale_replicas(const nlohmann::json& scale, const char* part,
                                      std::string* why);

// The response with its `decision` label (the admissions counter's) set.
AdmissionResponse with_decision(AdmissionResponse response, std::string decision);

// Why an envelope could not be read. `http_status` 400 means the body is not an
// AdmissionReview we can answer (no readable uid); otherwise the review is answered with
// allowed=false and `message`, echoing `uid`.
class MalformedReview : public std::runtime_error {
 public:
  MalformedReview(int http_status, std::string uid, std::string api_version,
                  const std::string& message)
      : std::runtime_error(message),
        http_status_(http_status),
        uid_(std::move(uid)),
        api_version_(std::move(api_version)) {}
  int http_status() const { return http_status_; }  // 400, or 200 for an allowed=false answer
  const std::string& uid() const { return uid_; }
  const std::string& api_version() const { return api_version_; }

 private:
  int http_status_;
  std::string uid_;
  std::string api_version_;
};

// Limits on what the parser accepts (docs/webhook.md "Malformed requests").
inline constexpr int kMaxJsonDepth = 128;

// The deepest nesting of arrays and objects in `body`, counted without parsing (brackets
// inside strings do not count), stopping as soon as it passes `limit`: a body of a million
// '[' is refused before a recursive walk (dump, comparison) could overflow the stack.
int json_nesting_depth(std::string_view body, int limit);

// Parses a request body. Throws MalformedReview.
AdmissionRequest parse_admission_review(std::string_view body);

// The response envelope, echoing the request's uid and apiVersion.
nlohmann::json admission_review_response(const std::string& uid, const std::string& api_version,
                                         const AdmissionResponse& response);
// The same envelope as bytes, written without building a JSON tree: exactly
// admission_review_response(...).dump() (keys in the same sorted order, strings escaped
// the same way; tests/webhook/response_writer_parity_test.cpp holds the two together). What
// the HTTP layer sends: the tree and its dump cost as much as the decision (#9).
std::string admission_review_response_bytes(const std::string& uid, const std::string& api_version,
                                            const AdmissionResponse& response);

// Reads the uid from a body when it can (for the 500 answer after an exception): "" if not.
std::string try_read_uid(std::string_view body);

// Escapes one JSON pointer token ("commgate.io/decision" -> "commgate.io~1decision").
std::string json_pointer_token(std::string_view token);

// Who asks, as core's decision reads it (exemptions).
Requester requester_of(const UserInfo& user);

// The TrainingJob under admission (request.object, parsed as parse_training_job does for
// ObjectSource::kAdmission, without its verbatim template), in the request's namespace
// when the object names none: policy selection and record signatures read it. Throws
// ValidationError with every field path.
TrainingJob job_under_admission(const AdmissionRequest& request);

}  // namespace commgate::webhook
