#include "tests/support/builders.h"

namespace commgate::testing {

TrainingJobBuilder::TrainingJobBuilder(std::string name) {
  doc_ = {{"apiVersion", "commgate.io/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", name}, {"namespace", "research"}}},
          {"spec",
           {{"numNodes", 2},
            {"model", {{"parameters", "25M"}}},
            {"template",
             {{"spec", {{"containers", {{{"name", "trainer"}, {"image", "train:1"}}}}}}}}}}};
}
TrainingJobBuilder& TrainingJobBuilder::nodes(int n) {
  return set("/spec/numNodes", n);
}
TrainingJobBuilder& TrainingJobBuilder::min_nodes(int n) {
  return set("/spec/minNodes", n);
}
TrainingJobBuilder& TrainingJobBuilder::procs_per_node(int n) {
  return set("/spec/numProcPerNode", n);
}
TrainingJobBuilder& TrainingJobBuilder::params(double p) {
  return set("/spec/model/parameters", p);
}
TrainingJobBuilder& TrainingJobBuilder::dtype(const std::string& d) {
  return set("/spec/model/gradientDtype", d);
}
TrainingJobBuilder& TrainingJobBuilder::step_time_hint_ms(double ms) {
  return set("/spec/model/stepTimeHintMs", ms);
}
TrainingJobBuilder& TrainingJobBuilder::namespace_(const std::string& ns) {
  return set("/metadata/namespace", ns);
}
TrainingJobBuilder& TrainingJobBuilder::policy_ref(const std::string& name) {
  return set("/spec/policyRef", {{"name", name}});
}
TrainingJobBuilder& TrainingJobBuilder::set(const std::string& pointer, nlohmann::json value) {
  doc_[nlohmann::json::json_pointer(pointer)] = std::move(value);
  return *this;
}
TrainingJobBuilder& TrainingJobBuilder::remove(const std::string& pointer) {
  nlohmann::json::json_pointer p(pointer);
  doc_[p.parent_pointer()].erase(p.back());
  return *this;
}
TrainingJob TrainingJobBuilder::build() const {
  return parse_training_job(doc_);
}
TrainingJobBuilder a_training_job(const std::string& name) {
  return TrainingJobBuilder(name);
}

PolicyBuilder::PolicyBuilder() {
  policy_ = default_comm_policy();
}
PolicyBuilder& PolicyBuilder::max_comm_share(double s) {
  policy_.spec.max_comm_share = s;
  return *this;
}
PolicyBuilder& PolicyBuilder::min_scaling_efficiency(double e) {
  policy_.spec.min_scaling_efficiency = e;
  return *this;
}
PolicyBuilder& PolicyBuilder::action(EnforcementAction a) {
  policy_.spec.enforcement_action = a;
  return *this;
}
PolicyBuilder& PolicyBuilder::on_missing(MissingMeasurementAction a) {
  policy_.spec.on_missing_measurement = a;
  return *this;
}
PolicyBuilder& PolicyBuilder::ttl(std::chrono::nanoseconds ttl) {
  policy_.spec.measurement_ttl = ttl;
  return *this;
}
PolicyBuilder& PolicyBuilder::exempt_user(const std::string& u) {
  policy_.spec.exemptions.users.push_back(u);
  return *this;
}
PolicyBuilder& PolicyBuilder::exempt_group(const std::string& g) {
  policy_.spec.exemptions.groups.push_back(g);
  return *this;
}
PolicyBuilder& PolicyBuilder::exempt_service_account(const std::string& ns_name) {
  policy_.spec.exemptions.service_accounts.push_back(ns_name);
  return *this;
}
PolicyBuilder& PolicyBuilder::named(const std::string& name) {
  policy_.metadata.name = name;
  return *this;
}
PolicyBuilder& PolicyBuilder::namespace_selector(const std::string& key, const std::string& value) {
  policy_.spec.namespace_selector.match_labels[key] = value;
  return *this;
}
PolicyBuilder& PolicyBuilder::unmanaged_workloads(UnmanagedWorkloads u) {
  policy_.spec.unmanaged_workloads = u;
  return *this;
}
PoolNode a_pool_node(const std::string& name, std::map<std::string, std::string> labels,
                     double gpus) {
  PoolNode n;
  n.name = name;
  n.labels = std::move(labels);
  n.ready = true;
  if (gpus > 0) n.accelerators[kNvidiaGpu] = gpus;
  return n;
}

PolicyBuilder a_policy() {
  return PolicyBuilder();
}

TimePoint test_now() {
  return *parse_rfc3339("2026-11-30T12:00:00Z");
}

MeasurementBuilder::MeasurementBuilder() {
  m_.source = "test";
  m_.measured_at = test_now() - std::chrono::hours(1);
  m_.nodes_probed = 2;
  m_.link.ranks = 2;
  m_.link.busbw_bytes_per_s = 0.118e9;
  m_.link.latency_s = 200e-6;
  m_.backend = "gloo";
  m_.transport = "socket";
  m_.compute = ComputeProfile::from_step_time(0.300);
}
MeasurementBuilder& MeasurementBuilder::busbw_gbps(double g) {
  m_.link.busbw_bytes_per_s = g * 1e9;
  return *this;
}
MeasurementBuilder& MeasurementBuilder::latency_us(double us) {
  m_.link.latency_s = us * 1e-6;
  return *this;
}
MeasurementBuilder& MeasurementBuilder::nodes_probed(int n) {
  m_.nodes_probed = n;
  m_.link.ranks = n;
  return *this;
}
MeasurementBuilder& MeasurementBuilder::compute_ms(double ms) {
  m_.compute = ComputeProfile::from_step_time(ms / 1e3);
  return *this;
}
MeasurementBuilder& MeasurementBuilder::no_compute(const std::string& why) {
  m_.compute.reset();
  m_.compute_missing_reason = why;
  return *this;
}
MeasurementBuilder& MeasurementBuilder::measured_at(TimePoint t) {
  m_.measured_at = t;
  return *this;
}
MeasurementBuilder& MeasurementBuilder::poor_fit(const std::string& note) {
  m_.link.poor = true;
  m_.link.note = note;
  return *this;
}
MeasurementBuilder a_measurement() {
  return MeasurementBuilder();
}

}  // namespace commgate::testing
