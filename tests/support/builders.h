// Fluent builders for test objects:
//   a_training_job("bert").nodes(4).params(340e6).build()
//   a_measurement().busbw_gbps(0.118).compute_ms(300).build()
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/comm_policy.h"
#include "core/measurement.h"
#include "core/pool_nodes.h"
#include "core/training_job.h"

namespace commgate::testing {

// Builds a TrainingJob manifest (JSON) and parses it, so tests exercise the real parser.
class TrainingJobBuilder {
 public:
  explicit TrainingJobBuilder(std::string name);
  TrainingJobBuilder& nodes(int n);
  TrainingJobBuilder& min_nodes(int n);
  TrainingJobBuilder& procs_per_node(int n);
  TrainingJobBuilder& params(double p);
  TrainingJobBuilder& dtype(const std::string& d);
  TrainingJobBuilder& step_time_hint_ms(double ms);
  TrainingJobBuilder& namespace_(const std::string& ns);
  TrainingJobBuilder& policy_ref(const std::string& name);
  // Sets a field by JSON pointer ("/spec/numNodes"), for malformed-input tests.
  TrainingJobBuilder& set(const std::string& pointer, nlohmann::json value);
  TrainingJobBuilder& remove(const std::string& pointer);
  nlohmann::json json() const { return doc_; }
  TrainingJob build() const;

 private:
  nlohmann::json doc_;
};
TrainingJobBuilder a_training_job(const std::string& name = "job");

class PolicyBuilder {
 public:
  PolicyBuilder();
  PolicyBuilder& max_comm_share(double s);
  PolicyBuilder& min_scaling_efficiency(double e);
  PolicyBuilder& action(EnforcementAction a);
  PolicyBuilder& on_missing(MissingMeasurementAction a);
  PolicyBuilder& ttl(std::chrono::nanoseconds ttl);
  PolicyBuilder& exempt_user(const std::string& u);
  PolicyBuilder& exempt_group(const std::string& g);
  PolicyBuilder& exempt_service_account(const std::string& ns_name);
  PolicyBuilder& named(const std::string& name);
  PolicyBuilder& namespace_selector(const std::string& key, const std::string& value);
  PolicyBuilder& unmanaged_workloads(UnmanagedWorkloads u);
  CommPolicy build() const { return policy_; }

 private:
  CommPolicy policy_;
};
PolicyBuilder a_policy();

// A Ready, schedulable node with `labels`, and `gpus` allocatable nvidia.com/gpu when > 0.
PoolNode a_pool_node(const std::string& name, std::map<std::string, std::string> labels,
                     double gpus = 0);

// A fixed instant for hermetic tests.
TimePoint test_now();

class MeasurementBuilder {
 public:
  MeasurementBuilder();
  MeasurementBuilder& busbw_gbps(double g);
  MeasurementBuilder& latency_us(double us);
  MeasurementBuilder& nodes_probed(int n);
  MeasurementBuilder& compute_ms(double ms);  // split 30/60/10 forward/backward/optimizer
  MeasurementBuilder& no_compute(const std::string& why);
  MeasurementBuilder& measured_at(TimePoint t);
  MeasurementBuilder& poor_fit(const std::string& note);
  Measurement build() const { return m_; }

 private:
  Measurement m_;
};
MeasurementBuilder a_measurement();

}  // namespace commgate::testing
