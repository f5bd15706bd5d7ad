// commgate-webhook-bench-inputs OUTDIR [BUSBW_GBPS]: writes what bench/webhook/run.sh
// serves and sends, built with core's own types so the inputs always parse:
//   OUTDIR/review.json        an AdmissionReview v1 CREATE of the ~3 KB benchmark TrainingJob
//   OUTDIR/profiles/<pool>.json  the CommProfile of that job's node pool, measured now, with
//                             a compute record for the job's model (so the webhook decides
//                             from measurements, the path production takes)
// The link's bus bandwidth (default 13 GB/s, about 100 GbE) puts the 8-node job just over
// the default policy, so every request takes the downsize path (8 -> 2 nodes): the decision
// over the node counts, a JSONPatch and a warning.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "bench/realistic_job.h"
#include "core/comm_profile.h"
#include "core/time_format.h"
#include "core/training_job.h"

namespace {

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: commgate-webhook-bench-inputs OUTDIR [BUSBW_GBPS]\n";
    return 2;
  }
  try {
    const std::filesystem::path out = argv[1];
    const double busbw_gbps = argc == 3 ? std::stod(argv[2]) : 13.0;
    std::filesystem::create_directories(out / "profiles");

    const nlohmann::json job = nlohmann::json::parse(commgate::bench::realistic_job_json());
    const commgate::TrainingJob parsed = commgate::parse_training_job(job);
    const nlohmann::json review = {
        {"apiVersion", "admission.k8s.io/v1"},
        {"kind", "AdmissionReview"},
        {"request",
         {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
          {"kind", {{"group", "commgate.io"}, {"version", "v1alpha1"}, {"kind", "TrainingJob"}}},
          {"resource",
           {{"group", "commgate.io"}, {"version", "v1alpha1"}, {"resource", "trainingjobs"}}},
          {"requestKind",
           {{"group", "commgate.io"}, {"version", "v1alpha1"}, {"kind", "TrainingJob"}}},
          {"requestResource",
           {{"group", "commgate.io"}, {"version", "v1alpha1"}, {"resource", "trainingjobs"}}},
          {"name", parsed.metadata.name},
          {"namespace", parsed.metadata.namespace_},
          {"operation", "CREATE"},
          {"userInfo",
           {{"username", "researcher@example.org"},
            {"uid", "014fbff9a07c"},
            {"groups", {"research", "system:authenticated"}}}},
          {"object", job},
          {"oldObject", nullptr},
          {"dryRun", false},
          {"options", {{"kind", "CreateOptions"}, {"apiVersion", "meta.k8s.io/v1"}}}}}};
    write(out / "review.json", review.dump());

    const auto now = commgate::Clock::now();
    commgate::CommProfile profile;
    profile.node_selector = parsed.spec.node_selector;
    profile.metadata.name = commgate::pool_name(profile.node_selector);
    profile.status.backend = "nccl";
    profile.status.transport = "socket";
    profile.status.link = commgate::LinkRecord{
        40, busbw_gbps, busbw_gbps / 1.875 /* 16 ranks: 2(n-1)/n */, 2, 8, 0.02, false, "", now};
    commgate::ComputeStepRecord step;
    step.parameters = parsed.spec.model.parameters;
    step.gradient_dtype = parsed.spec.model.gradient_dtype;
    step.batch_size = parsed.spec.model.batch_size;
    step.optimizer = parsed.spec.model.optimizer;
    step.step_time_ms = 200;
    step.forward_ms = 60;
    step.backward_ms = 120;
    step.optimizer_ms = 20;
    step.measured_at = now;
    profile.status.compute_steps.push_back(step);
    nlohmann::json profile_json = commgate::to_json(profile);
    write(out / "profiles" / (profile.metadata.name + ".json"), profile_json.dump(2));
    std::cout << "review " << std::filesystem::file_size(out / "review.json") << " bytes, profile "
              << profile.metadata.name << "\n";
  } catch (const std::exception& e) {
    std::cerr << "commgate-webhook-bench-inputs: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
