// Leader election on a coordination.k8s.io/v1 Lease, as client-go's tools/leaderelection
// (LeaseLock) does it: every replica runs a LeaderElector; the one whose identity is the
// Lease's spec.holderIdentity leads and renews spec.renewTime every retry period.
//
//   candidate ──acquired──▶ leader ──renew failed for renew_deadline──▶ candidate
//       ▲                     │      (or another holder seen in the Lease)
//       │                     └──stop()──▶ on_stopped_leading, release ──▶ (run returns)
//       └── retry every retry_period while the Lease is held by another, live holder
//
// Safety rests on one inequality, checked at construction: renew_deadline < lease_duration.
// A leader that has not renewed for renew_deadline stops acting (on_stopped_leading) at
// once, while another replica takes the Lease only after it saw the same record unchanged
// for lease_duration by its *own* clock (never the holder's timestamps, which come from
// another machine's wall clock), counted from when it first observed that record, so
// after the leader's last successful renewal.
//
// Release (client-go's ReleaseOnCancel): on stop(), a leader calls on_stopped_leading and
// then writes the Lease with an empty holderIdentity, so a candidate takes it at its next
// retry instead of waiting for it to expire.
//
// Not modelled: client-go's jitter on the retry period (two or three replicas here) and
// its optional OnNewLeader goroutine (on_new_leader is called inline instead).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/log.h"
#include "kube/clock.h"

namespace commgate::kube {

// The three API calls leader election makes on one Lease. Production implements it over
// the API client (GET/POST/PUT on /apis/coordination.k8s.io/v1/namespaces/NS/leases[/NAME]);
// tests use an in-memory fake. Each call must return within a bounded time (the HTTP
// client's request timeout, well under lease_duration - renew_deadline), because a leader
// can only notice that its renew deadline passed between calls.
class LeaseClient {
 public:
  enum class Outcome {
    kOk,        // `object` is the Lease as the server stored it
    kNotFound,  // get: no such Lease
    kConflict,  // create: it exists already (409 AlreadyExists); update: stale resourceVersion
    kError,     // anything else (network, 5xx, 429...): `message` says what
  };
  struct Reply {
    Outcome outcome = Outcome::kError;
    nlohmann::json object;
    std::string message;
  };

  virtual ~LeaseClient() = default;
  virtual Reply get(const std::string& ns, const std::string& name) = 0;
  virtual Reply create(const nlohmann::json& lease) = 0;
  // `lease.metadata.resourceVersion` is the version read: kConflict when it changed since.
  virtual Reply update(const nlohmann::json& lease) = 0;
};
const char* to_string(LeaseClient::Outcome outcome);

struct LeaderElectionOptions {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // unique per replica (pod name + a random suffix)
  // How long a candidate waits, by its own clock, after last seeing the Lease change
  // before it takes it from another holder; written as spec.leaseDurationSeconds.
  Clock::duration lease_duration = std::chrono::seconds(15);
  // How long a leader keeps acting without a successful renewal. < lease_duration.
  Clock::duration renew_deadline = std::chrono::seconds(10);
  // Time between attempts, to acquire as a candidate and to renew as a leader.
  Clock::duration retry_period = std::chrono::seconds(2);
  bool release_on_stop = true;
  // Called on run()'s thread: should start or stop the work and return soon. After
  // on_stopped_leading returns, the replica must no longer act as leader.
  std::function<void()> on_started_leading = [] {};
  std::function<void()> on_stopped_leading = [] {};
  // The holder seen in the Lease changed (empty when released). Optional.
  std::function<void(const std::string& holder)> on_new_leader = [](const std::string&) {};
  std::shared_ptr<Clock> clock = steady_clock();
  // Only for the timestamps written into the Lease; never used to decide anything.
  std::function<std::chrono::system_clock::time_point()> wall_clock = [] {
    return std::chrono::system_clock::now();
  };
  Logger log;
};

// Throws std::invalid_argument naming the option: empty names or identity, a non-positive
// duration, renew_deadline >= lease_duration, retry_period >= renew_deadline, or a
// lease_duration that is not a whole number of seconds.
void validate(const LeaderElectionOptions& options);

// Kubernetes' MicroTime: "2006-01-02T15:04:05.000000Z" (UTC, microseconds).
std::string format_micro_time(std::chrono::system_clock::time_point t);

class LeaderElector {
 public:
  LeaderElector(std::shared_ptr<LeaseClient> client, LeaderElectionOptions options);

  // Runs the election until stop(); on the way out a leader stops leading and, with
  // release_on_stop, releases the Lease. Call once.
  void run();
  // Thread-safe; run() returns soon after.
  void stop();

  // One round at the clock's now: a leader past its renew deadline stops leading; an
  // attempt (acquire or renew) is made when one is due. Returns when the next round is
  // due. run() is a loop of step() and a wait on the clock; tests call it directly.
  Clock::time_point step();
  // A leader gives the Lease up (empty holderIdentity); does nothing for a candidate.
  // Returns whether the Lease was released. on_stopped_leading is called first.
  bool release();

  // Leading, and the last successful renewal is younger than the renew deadline.
  bool is_leader() const;
  // The holderIdentity last seen in the Lease (empty: none or released).
  std::string observed_leader() const;

 private:
  bool try_acquire_or_renew();
  void observe(const nlohmann::json& spec, Clock::time_point now);
  nlohmann::json desired_lease(const nlohmann::json& current, bool renewing) const;
  void start_leading();
  void stop_leading(const char* why);

  std::shared_ptr<LeaseClient> client_;
  LeaderElectionOptions options_;

  mutable std::mutex mu_;  // guards the fields below; never held while calling out
  bool leading_ = false;
  Clock::time_point last_renew_{};     // start of the last successful acquire or renew
  Clock::time_point next_attempt_{};   // when the next acquire or renew is due
  nlohmann::json observed_spec_;       // the Lease's spec as last read or written
  Clock::time_point observed_time_{};  // by our clock: when observed_spec_ was first seen
  std::string observed_holder_;
  bool stopping_ = false;
  std::condition_variable cv_;
};

}  // namespace commgate::kube
