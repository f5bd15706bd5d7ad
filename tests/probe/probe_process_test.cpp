// commgate-probe as a program, over loopback: the contract `commgate evaluate` relies on
// (--local-ranks: stdout is rank 0's JSON), the termination message, exit codes, and the
// failures that must be clear (bad flags, a rank that never joins, a wrong MASTER_ADDR,
// a hung stage under --timeout).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <nlohmann/json.hpp>

#include "core/probe_result.h"
#include "tests/probe/subprocess.h"
#include "tests/support/scratch_dir.h"

namespace commgate::probe {
namespace COMMGATE_TEST_UNIT {

using std::chrono::seconds;
using testing::Finished;
using testing::read_file;

const std::string kProbe = COMMGATE_PROBE_BIN;

std::string scratch(const std::string& name) {
  return (commgate::testing::scratch_dir() / ("probe-" + name)).string();
}

// A loopback port nothing listens on (bound, then released).
int unused_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

bool contains(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST(ProbeProcess, bad_flags_exit_2_with_a_message_naming_the_flag) {
  Finished f = testing::run({kProbe, "--params", "many"}, {}, scratch("badflag"), seconds(30));
  EXPECT_EQ(f.exit_code, 2);
  EXPECT_TRUE(contains(f.err, "--params")) << f.err;
  EXPECT_TRUE(f.out.empty());
  Finished help = testing::run({kProbe, "--help"}, {}, scratch("help"), seconds(30));
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(contains(help.out, "Exit codes")) << help.out;
}

TEST(ProbeProcess, local_ranks_print_rank_zeros_json_and_a_compact_termination_message) {
  const std::string term = scratch("local.termination");
  const std::string output = scratch("local.json");
  Finished f = testing::run(
      {kProbe, "--local-ranks", "2",           "--params",          "1M", "--batch-size",
       "8",    "--max-bytes",   "1Mi",         "--compute-iters",   "3",  "--ddp-iters",
       "2",    "--timeout",     "60",          "--termination-log", term, "--output",
       output, "--note",        "process test"},
      {}, scratch("local"), seconds(90));
  ASSERT_EQ(f.exit_code, 0) << f.err;
  ProbeResult r = parse_probe_result(nlohmann::json::parse(f.out));  // stdout is one document
  EXPECT_EQ(r.nodes, 2);
  EXPECT_EQ(r.backend, "gloo");
  EXPECT_EQ(r.interface_name, "lo");
  // Both ranks reported their link: lo is not physical, so no rate.
  ASSERT_TRUE(r.links);
  EXPECT_EQ(r.links->ranks, 2);
  EXPECT_EQ(r.links->ranks_known, 0);
  EXPECT_EQ(r.links->rate_bits_per_s, 0);
  EXPECT_EQ(r.hostnames.size(), 2u);
  ASSERT_FALSE(r.allreduce.empty());
  EXPECT_EQ(r.allreduce.back().bytes, 1024.0 * 1024);
  for (const auto& a : r.allreduce) EXPECT_TRUE(a.data_check_ok);
  ASSERT_TRUE(r.compute);
  EXPECT_NEAR(r.compute->parameters, 1e6, 0.01e6);
  EXPECT_GT(r.compute->step_time_ms, 0);
  // The steadiness the decision reads: rounds run, and each rank's median gathered (the
  // slowest is one of the two ranks, at least the ranks' mean).
  EXPECT_GE(r.compute->rounds, 1);
  EXPECT_LE(r.compute->rounds, kMaxComputeRounds);
  EXPECT_TRUE(r.compute->slowest_rank == 0 || r.compute->slowest_rank == 1);
  EXPECT_GE(r.compute->slowest_rank_step_ms, r.compute->step_time_ms * (1 - 1e-9));
  ASSERT_TRUE(r.ddp_step);
  EXPECT_GT(r.ddp_step->step_time_ms, 0);
  EXPECT_GE(r.ddp_step->comm_share, 0);
  EXPECT_EQ(r.note, "process test");
  EXPECT_FALSE(r.error);
  EXPECT_EQ(nlohmann::json::parse(read_file(output)), nlohmann::json::parse(f.out));
  const std::string compact = read_file(term);
  EXPECT_LE(compact.size(), kTerminationMessageLimit);
  EXPECT_EQ(parse_probe_result(nlohmann::json::parse(compact)).nodes, 2);
  EXPECT_TRUE(contains(f.err, "busbw")) << "human summary on stderr";
}

// --output where it cannot be written (a trial of 2026-12-06: a read-only root filesystem):
// the result still on stdout, the failure said, and exit 1, not 0.
TEST(ProbeProcess, an_output_file_that_cannot_be_written_fails_the_run) {
  Finished f = testing::run(
      {kProbe, "--params", "1M", "--batch-size", "8", "--max-bytes", "1Mi", "--compute-iters", "2",
       "--ddp-iters", "2", "--timeout", "60", "--termination-log", "", "--quiet", "--output",
       scratch("no-such-dir") + "/result.json"},
      {}, scratch("unwritable"), seconds(60));
  EXPECT_EQ(f.exit_code, 1) << f.err;
  EXPECT_TRUE(contains(f.err, "cannot write --output")) << f.err;
  EXPECT_EQ(parse_probe_result(nlohmann::json::parse(f.out)).nodes, 1);
}

// One probe for several jobs' models (issue #21), and DDP's gradient compression: the
// first model's buckets go as bf16 (as fp16 over Gloo: LibTorch 1.13's Gloo has no bf16
// all-reduce), the second's as fp16, each model with its own compute and DDP step.
TEST(ProbeProcess, local_ranks_time_several_models_with_compressed_gradients) {
  const std::string term = scratch("models.termination");
  Finished f = testing::run({kProbe,
                             "--local-ranks",
                             "2",
                             "--params",
                             "1M",
                             "--batch-size",
                             "8",
                             "--optimizer",
                             "sgd",
                             "--gradient-dtype",
                             "bf16",
                             "--also-model",
                             "params=300k,batch=16,optimizer=adam,dtype=fp16",
                             "--max-bytes",
                             "4Mi",
                             "--compute-iters",
                             "3",
                             "--ddp-iters",
                             "2",
                             "--timeout",
                             "60",
                             "--termination-log",
                             term},
                            {}, scratch("models"), seconds(90));
  ASSERT_EQ(f.exit_code, 0) << f.err;
  const ProbeResult r = parse_probe_result(nlohmann::json::parse(f.out));
  ASSERT_TRUE(r.compute);
  EXPECT_NEAR(r.compute->parameters, 1e6, 0.01e6);
  EXPECT_EQ(r.compute->gradient_dtype, "bf16");
  EXPECT_EQ(r.compute->optimizer, "sgd");
  ASSERT_TRUE(r.ddp_step);
  EXPECT_GT(r.ddp_step->step_time_ms, 0);
  ASSERT_EQ(r.additional_models.size(), 1u) << f.out;
  const ModelResult& second = r.additional_models[0];
  EXPECT_NEAR(second.compute.parameters, 300e3, 3e3);
  EXPECT_EQ(second.compute.batch_size, 16);
  EXPECT_EQ(second.compute.optimizer, "adam");
  EXPECT_EQ(second.compute.gradient_dtype, "fp16");
  EXPECT_GT(second.compute.step_time_ms, 0);
  ASSERT_TRUE(second.ddp_step);
  EXPECT_GT(second.ddp_step->step_time_ms, 0);
  // The sweep reaches the largest model's gradient (1M fp32 parameters: 4 MB).
  EXPECT_GE(r.allreduce.back().bytes, 2.0 * 1024 * 1024);
  const ProbeResult compact = parse_probe_result(nlohmann::json::parse(read_file(term)));
  ASSERT_EQ(compact.additional_models.size(), 1u);
  EXPECT_EQ(compact.additional_models[0].compute.gradient_dtype, "fp16");
  size_t lines = 0;
  for (size_t at = f.err.find("  compute: "); at != std::string::npos;
       at = f.err.find("  compute: ", at + 1))
    ++lines;
  EXPECT_EQ(lines, 2u) << "a summary line per model:\n" << f.err;
}

TEST(ProbeProcess, a_rank_that_never_joins_makes_the_others_fail_clearly_within_the_timeout) {
  const int port = unused_port();
  Finished f = testing::run({kProbe, "--no-compute", "--timeout", "6", "--termination-log", ""},
                            {{"MASTER_ADDR", "127.0.0.1"},
                             {"MASTER_PORT", std::to_string(port)},
                             {"RANK", "0"},
                             {"WORLD_SIZE", "2"}},
                            scratch("nojoin"), seconds(30));
  EXPECT_EQ(f.exit_code, 3) << f.err;
  EXPECT_LE(f.seconds, 6 + 5);
  ProbeResult r = parse_probe_result(nlohmann::json::parse(f.out));
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->stage, "rendezvous");
  EXPECT_TRUE(contains(r.error->message, "127.0.0.1:" + std::to_string(port))) << r.error->message;
  EXPECT_TRUE(contains(r.error->message, "rank(s) 1 to join")) << r.error->message;
}

TEST(ProbeProcess, a_wrong_master_addr_is_named_in_the_error) {
  // Nothing serves the store there: rank 1 cannot connect.
  const int port = unused_port();
  Finished f = testing::run({kProbe, "--no-compute", "--timeout", "5"},
                            {{"MASTER_ADDR", "127.0.0.1"},
                             {"MASTER_PORT", std::to_string(port)},
                             {"RANK", "1"},
                             {"WORLD_SIZE", "2"}},
                            scratch("wrongaddr"), seconds(30));
  EXPECT_EQ(f.exit_code, 3) << f.err;
  EXPECT_LE(f.seconds, 5 + 5);
  EXPECT_TRUE(
      contains(f.err, "could not connect to the store at 127.0.0.1:" + std::to_string(port)))
      << f.err;
  EXPECT_TRUE(f.out.empty()) << "only rank 0 writes the result";

  // An address that does not resolve fails at once, naming it.
  Finished g =
      testing::run({kProbe, "--no-compute", "--timeout", "5", "--termination-log", ""},
                   {{"MASTER_ADDR", "no-such-master.invalid"}, {"RANK", "0"}, {"WORLD_SIZE", "2"}},
                   scratch("unresolvable"), seconds(30));
  EXPECT_EQ(g.exit_code, 3) << g.err;
  EXPECT_TRUE(contains(g.err, "no-such-master.invalid")) << g.err;
}

TEST(ProbeProcess, a_stage_that_outlasts_the_timeout_is_reported_by_name) {
  // 64 MiB all-reduces, 100000 times: the sweep cannot finish in 8 s.
  const std::string term = scratch("hang.termination");
  Finished f = testing::run(
      {kProbe, "--local-ranks", "2", "--no-compute", "--min-bytes", "64Mi", "--max-bytes", "64Mi",
       "--iters", "100000", "--timeout", "8", "--termination-log", term},
      {}, scratch("hang"), seconds(30));
  EXPECT_EQ(f.exit_code, 4) << f.err;
  EXPECT_LE(f.seconds, 8 + 5);
  ProbeResult r = parse_probe_result(nlohmann::json::parse(f.out));
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->stage, "allreduce");
  EXPECT_TRUE(contains(r.error->message, "allreduce 64 MiB")) << r.error->message;
  EXPECT_TRUE(contains(r.error->message, "--timeout")) << r.error->message;
  ASSERT_TRUE(parse_probe_result(nlohmann::json::parse(read_file(term))).error);
}

TEST(ProbeProcess, the_optimizer_asked_for_is_the_one_reported) {
  const int port = unused_port();
  Finished f =
      testing::run({kProbe, "--backend",    "gloo", "--optimizer", "sgd",  "--params",
                    "100k", "--batch-size", "4",    "--max-bytes", "64Ki", "--compute-iters",
                    "2",    "--ddp-iters",  "1",    "--timeout",   "60",   "--termination-log",
                    "",     "--quiet"},
                   {{"MASTER_ADDR", "127.0.0.1"},
                    {"MASTER_PORT", std::to_string(port)},
                    {"RANK", "0"},
                    {"WORLD_SIZE", "1"}},
                   scratch("optimizer"), seconds(90));
  ASSERT_EQ(f.exit_code, 0) << f.err;
  const auto doc = nlohmann::json::parse(f.out);
  EXPECT_EQ(doc["compute"]["optimizer"], "sgd") << f.out;
  ASSERT_TRUE(parse_probe_result(doc).compute);
  EXPECT_EQ(parse_probe_result(doc).compute->optimizer, "sgd");

  Finished bad = testing::run({kProbe, "--optimizer", "lamb"}, {}, scratch("badopt"), seconds(30));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(contains(bad.err, "--optimizer: must be one of sgd, sgd-momentum")) << bad.err;
}

// The user trial: `--params 1P` (within the CRD's bound of 1e15) grew each rank by ~100
// MB/s toward the node's OOM. The probe now refuses the model before allocating it, still
// measures the link, and exits as a failed stage, quickly and small. Without the check
// this run fills memory until the watchdog's --timeout (exit 4).
TEST(ProbeProcess, a_model_too_big_for_the_machine_is_refused_before_it_is_allocated) {
  const int port = unused_port();
  Finished f = testing::run({kProbe, "--backend", "gloo", "--params", "1P", "--max-bytes", "1Mi",
                             "--timeout", "20", "--termination-log", "", "--quiet"},
                            {{"MASTER_ADDR", "127.0.0.1"},
                             {"MASTER_PORT", std::to_string(port)},
                             {"RANK", "0"},
                             {"WORLD_SIZE", "1"}},
                            scratch("1P"), seconds(60));
  EXPECT_EQ(f.exit_code, 1) << f.err;
  EXPECT_LE(f.seconds, 15);
  ProbeResult r = parse_probe_result(nlohmann::json::parse(f.out));
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->stage, "compute");
  EXPECT_TRUE(contains(r.error->message, "the model needs ")) << r.error->message;
  EXPECT_TRUE(contains(r.error->message, "PiB of memory per rank (1e+15 parameters with adamw"))
      << r.error->message;
  EXPECT_TRUE(contains(r.error->message, "but this node has ")) << r.error->message;
  EXPECT_TRUE(contains(r.error->message, "spec.model.stepTimeHintMs")) << r.error->message;
  EXPECT_FALSE(r.allreduce.empty()) << "the link is still measured";
  EXPECT_FALSE(r.compute);
  // Peak RSS of the children this test waited for: LibTorch and a 1 MiB sweep, not a model.
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  EXPECT_LT(usage.ru_maxrss, 1536L * 1024) << "peak RSS " << usage.ru_maxrss << " KiB";
}

// `--local-ranks` (what `commgate evaluate` runs): the ranks share one machine, and every
// rank stops at the compute stage together; rank 0's JSON says why.
TEST(ProbeProcess, local_ranks_refuse_a_model_too_big_for_the_machine_together) {
  Finished f = testing::run({kProbe, "--local-ranks", "2", "--params", "1P", "--max-bytes", "1Mi",
                             "--timeout", "30", "--termination-log", "", "--quiet"},
                            {}, scratch("1P-local"), seconds(60));
  EXPECT_EQ(f.exit_code, 1) << f.err;
  EXPECT_LE(f.seconds, 25);
  ProbeResult r = parse_probe_result(nlohmann::json::parse(f.out));
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->stage, "compute");
  EXPECT_TRUE(contains(r.error->message, " x 2 ranks on this node")) << r.error->message;
  EXPECT_FALSE(r.allreduce.empty());
}

TEST(ProbeProcess, nccl_without_a_usable_gpu_says_why_in_stage_backend) {
  // This machine has no GPU: a binary with the NCCL backend reads the CUDA runtime's
  // reason (a missing driver is not "no GPU visible"), one without says it was built so.
  const int port = unused_port();
  Finished f = testing::run({kProbe, "--backend", "nccl", "--no-compute", "--timeout", "30",
                             "--termination-log", "", "--quiet"},
                            {{"MASTER_ADDR", "127.0.0.1"},
                             {"MASTER_PORT", std::to_string(port)},
                             {"RANK", "0"},
                             {"WORLD_SIZE", "1"}},
                            scratch("nccl-nogpu"), seconds(60));
  EXPECT_EQ(f.exit_code, 1) << f.err;
  ProbeResult r = parse_probe_result(nlohmann::json::parse(f.out));
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->stage, "backend");
  EXPECT_TRUE(contains(r.error->message, "--backend nccl: ")) << r.error->message;
  EXPECT_TRUE(contains(r.error->message, "no usable GPU: cudaGetDeviceCount") ||
              contains(r.error->message, "built without the NCCL backend"))
      << r.error->message;
  EXPECT_FALSE(contains(r.error->message, "no GPU is visible")) << r.error->message;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::probe
