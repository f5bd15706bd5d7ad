// The TrainingJob the benchmarks use: a pod template with env, resources, volumes and
// probes, as researchers write them (about 3 KB serialized). One definition shared by the
// decision benchmark and the webhook benchmark's inputs.
#pragma once

#include <string>

namespace commgate::bench {

// 8 nodes x 8 GPUs, a 340M-parameter fp32 model, batch 16, on a nodeSelector'd pool.
std::string realistic_job_json();

}  // namespace commgate::bench
