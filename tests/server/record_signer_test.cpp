// server/record_signer: HMAC-SHA256 signatures on decision records (issue #19 item 2).
#include "server/record_signer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "core/decision_record.h"

namespace commgate::server {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;

// RFC 4231 test cases 1 and 2: OpenSSL's HMAC as the RFC computes it.
TEST(RecordSigner, HmacSha256IsRfc4231s) {
  EXPECT_EQ(hmac_sha256_hex(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hmac_sha256_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

DecisionRecord a_record() {
  DecisionRecord r;
  r.action = Action::kAdmit;
  r.admitted_nodes = 4;
  r.requested_nodes = 4;
  r.reason = "WithinPolicy";
  r.policy = {"default", ""};
  r.decided_at = TimePoint(std::chrono::seconds(1'800'000'000));
  r.spec_hash = "0123456789abcdef";
  return r;
}

TEST(RecordSigner, ASignedRecordVerifiesInItsNamespaceOnly) {
  const RecordSigner signer(std::string(32, 'k'));
  DecisionRecord r = a_record();
  signer.sign(r, "ml");
  EXPECT_EQ(r.mac.size(), 64u);
  EXPECT_TRUE(signer.verifies(r, "ml"));
  EXPECT_FALSE(signer.verifies(r, "vision")) << "copied to another namespace";
  // Through the annotation and back, as the operator reads it.
  const auto parsed = parse_decision_record(to_annotation(r));
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(signer.verifies(*parsed, "ml"));
}

TEST(RecordSigner, EveryChangedFieldBreaksTheSignature) {
  const RecordSigner signer(std::string(32, 'k'));
  DecisionRecord signed_record = a_record();
  signer.sign(signed_record, "ml");
  const std::vector<std::pair<const char*, std::function<void(DecisionRecord&)>>> edits = {
      {"admittedNodes", [](DecisionRecord& r) { r.admitted_nodes = 64; }},
      {"requestedNodes", [](DecisionRecord& r) { r.requested_nodes = 64; }},
      {"action", [](DecisionRecord& r) { r.action = Action::kWarn; }},
      {"specHash", [](DecisionRecord& r) { r.spec_hash = "fedcba9876543210"; }},
      {"decidedAt", [](DecisionRecord& r) { r.decided_at += std::chrono::hours(1); }},
      {"policy", [](DecisionRecord& r) { r.policy.name = "loose"; }},
      {"mac", [](DecisionRecord& r) { r.mac[0] = r.mac[0] == 'a' ? 'b' : 'a'; }},
      {"no mac", [](DecisionRecord& r) { r.mac.clear(); }},
  };
  for (const auto& [field, edit] : edits) {
    DecisionRecord r = signed_record;
    edit(r);
    EXPECT_FALSE(signer.verifies(r, "ml")) << field;
  }
  EXPECT_FALSE(RecordSigner(std::string(32, 'x')).verifies(signed_record, "ml")) << "another key";
}

TEST(RecordSigner, AKeyFileOfFewerThan32BytesIsRefusedNamingThePath) {
  const fs::path dir = fs::temp_directory_path() / ("cg-key-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "short") << "too short\n";
  std::ofstream(dir / "good") << std::string(64, 'a') << "\n";
  try {
    RecordSigner::from_file((dir / "short").string());
    ADD_FAILURE() << "a 9-byte key was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "short").string() + " holds 9 bytes; at least 32"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(RecordSigner::from_file((dir / "absent").string()), std::runtime_error);
  DecisionRecord r = a_record();
  RecordSigner::from_file((dir / "good").string()).sign(r, "ml");
  EXPECT_TRUE(RecordSigner(std::string(64, 'a')).verifies(r, "ml"))
      << "the trailing newline is not part of the key";
  fs::remove_all(dir);
}

// core's record_distrust: what the webhook and the operator ask before following a record.
TEST(RecordSigner, RecordDistrustSaysWhyARecordIsNotFollowed) {
  const RecordSigner signer(std::string(32, 'k'));
  TrainingJob job;
  job.metadata.namespace_ = "ml";
  job.metadata.name = "bert";
  job.metadata.creation_timestamp = TimePoint(std::chrono::seconds(1'800'000'000));
  DecisionRecord r = a_record();
  EXPECT_EQ(record_distrust(r, job, nullptr), "") << "without a key every record is followed";
  EXPECT_EQ(record_distrust(r, job, &signer), "the decision record carries no signature");
  signer.sign(r, record_subject(job.metadata));
  EXPECT_EQ(record_distrust(r, job, &signer), "");
  const std::string not_verified =
      "the decision record's signature does not verify (a record is signed for one job: its "
      "namespace and name)";
  job.metadata.namespace_ = "vision";
  EXPECT_EQ(record_distrust(r, job, &signer), not_verified) << "copied to another namespace";
  job.metadata.namespace_ = "ml";
  job.metadata.name = "bert-again";
  EXPECT_EQ(record_distrust(r, job, &signer), not_verified) << "copied to another job";
  job.metadata.name = "bert";
  // Decided 6 minutes before the job existed: copied from another job.
  job.metadata.creation_timestamp = r.decided_at + std::chrono::minutes(6);
  EXPECT_EQ(record_distrust(r, job, &signer),
            "the decision record was made before the job was created");
  job.metadata.creation_timestamp = r.decided_at + std::chrono::minutes(4);
  EXPECT_EQ(record_distrust(r, job, &signer), "") << "within the clocks' skew";
}

// A CREATE with generateName reaches /mutate without a name: its record is signed for
// "<namespace>/<generateName>*" and verifies on the job the API server then names, and on
// no job of another prefix.
TEST(RecordSigner, ARecordOfAGeneratedNameVerifiesOnTheNamedJob) {
  const RecordSigner signer(std::string(32, 'k'));
  TrainingJob job;
  job.metadata.namespace_ = "ml";
  job.metadata.generate_name = "sweep-";
  DecisionRecord r = a_record();
  EXPECT_EQ(record_subject(job.metadata), "ml/sweep-*");
  signer.sign(r, record_subject(job.metadata));
  EXPECT_EQ(record_distrust(r, job, &signer), "") << "at /mutate";
  job.metadata.name = "sweep-x7k2p";
  EXPECT_EQ(record_subject(job.metadata), "ml/sweep-x7k2p");
  EXPECT_EQ(record_distrust(r, job, &signer), "") << "stored, with its generated name";
  job.metadata.generate_name = "other-";
  job.metadata.name = "other-x7k2p";
  EXPECT_NE(record_distrust(r, job, &signer), "") << "another prefix";
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::server
