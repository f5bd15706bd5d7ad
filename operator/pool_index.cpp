#include "operator/pool_index.h"

#include "core/comm_profile.h"

namespace commgate::op {

using nlohmann::json;

std::optional<std::string> waiting_pool_of(const json& tj) {
  if (!tj.is_object()) return std::nullopt;
  const auto spec = tj.find("spec");
  if (spec == tj.end() || !spec->is_object()) return std::nullopt;
  if (spec->value("suspend", json(false)) != json(true)) return std::nullopt;
  std::map<std::string, std::string> selector;
  if (const auto sel = spec->find("nodeSelector"); sel != spec->end() && sel->is_object()) {
    for (const auto& [k, v] : sel->items())
      if (v.is_string()) selector[k] = v.get<std::string>();
  }
  return pool_name(selector);
}

std::vector<std::string> PoolIndex::update(const std::string& key, const json* object) {
  return update_pool(key, object ? waiting_pool_of(*object) : std::nullopt);
}

std::vector<std::string> PoolIndex::update_pool(const std::string& key,
                                                const std::optional<std::string>& now) {
  std::vector<std::string> touched;
  std::lock_guard lock(mu_);
  if (auto it = pool_of_.find(key); it != pool_of_.end()) {
    if (!now || *now != it->second) {
      auto& jobs = jobs_of_[it->second];
      jobs.erase(key);
      if (jobs.empty()) jobs_of_.erase(it->second);
    }
    touched.push_back(it->second);
    if (!now) pool_of_.erase(it);
  }
  if (now) {
    pool_of_[key] = *now;
    jobs_of_[*now].insert(key);
    if (touched.empty() || touched.front() != *now) touched.push_back(*now);
  }
  return touched;
}

std::vector<std::string> PoolIndex::waiting_on(const std::string& pool) const {
  std::lock_guard lock(mu_);
  const auto it = jobs_of_.find(pool);
  if (it == jobs_of_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

std::vector<std::string> PoolIndex::pools() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [pool, jobs] : jobs_of_) out.push_back(pool);
  return out;
}

std::vector<std::string> PoolIndex::waiting() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [key, pool] : pool_of_) out.push_back(key);
  return out;
}

}  // namespace commgate::op
