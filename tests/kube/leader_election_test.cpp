// Leader election on a Lease (kube/leader_election.h) against the in-memory LeaseClient,
// each replica on its own fake clock, all moved together in 100 ms ticks: a replica runs
// its round when it is due, as run() would, so every time below is exact.
#include "kube/leader_election.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>
#include <utility>

#include "tests/kube/fake_lease_client.h"
#include "tests/support/wait.h"

namespace commgate::kube {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::FakeLeaseClient;

constexpr char kNamespace[] = "commgate-system";
constexpr char kName[] = "commgate-operator";
const auto kWallStart = std::chrono::system_clock::time_point(seconds(1'790'000'000));

Clock::duration since_start(Clock::time_point t) {
  return t - Clock::time_point{};
}

json a_lease(json spec) {
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", kName}, {"namespace", kNamespace}}},
          {"spec", std::move(spec)}};
}

// One operator replica: an elector on its own fake clock, recording its callbacks.
class Replica {
 public:
  Replica(std::shared_ptr<LeaseClient> client, std::string identity)
      : clock_(std::make_shared<FakeClock>()) {
    LeaderElectionOptions o;
    o.lease_namespace = kNamespace;
    o.lease_name = kName;
    o.identity = std::move(identity);
    o.clock = clock_;
    o.wall_clock = [clock = clock_.get()] {
      return kWallStart + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                              since_start(clock->now()));
    };
    o.on_started_leading = [this] {
      ++started;
      started_at = since_start(clock_->now());
    };
    o.on_stopped_leading = [this] {
      ++stopped;
      stopped_at = since_start(clock_->now());
    };
    o.log = Logger([](const LogRecord&) {}, LogLevel::kError);
    elector = std::make_unique<LeaderElector>(std::move(client), std::move(o));
  }
  Replica(const Replica&) = delete;

  // Runs the elector's round when one is due at this replica's time.
  void tick() {
    if (clock_->now() >= next_) next_ = elector->step();
  }
  void advance(Clock::duration d) { clock_->advance(d); }
  bool leading() const { return elector->is_leader(); }

  std::unique_ptr<LeaderElector> elector;
  std::atomic<int> started{0}, stopped{0};
  Clock::duration started_at{}, stopped_at{};

 private:
  std::shared_ptr<FakeClock> clock_;
  Clock::time_point next_{};
};

// `length` of time for every replica, in 100 ms ticks; `each_tick` runs after the rounds.
void run_for(
    std::initializer_list<Replica*> replicas, Clock::duration length,
    const std::function<void()>& each_tick = [] {}) {
  for (Clock::duration t{}; t < length; t += milliseconds(100)) {
    for (Replica* r : replicas) r->tick();
    each_tick();
    for (Replica* r : replicas) r->advance(milliseconds(100));
  }
}

json stored_spec(const FakeLeaseClient& client) {
  const auto lease = client.lease(kNamespace, kName);
  return lease ? (*lease)["spec"] : json();
}

// --- a single candidate against the Lease as it finds it ------------------------------

struct AcquireCase {
  std::string name;
  std::optional<json> spec;                        // the Lease found at start; nullopt: none
  bool holder_keeps_renewing;                      // the holder in `spec` renews every 2 s
  std::optional<Clock::duration> want_leading_at;  // nullopt: never within a minute
  int64_t want_transitions;
  bool want_acquire_time_kept;
};

void PrintTo(const AcquireCase& c, std::ostream* os) {
  *os << c.name;
}

class AcquireTest : public ::testing::TestWithParam<AcquireCase> {};

TEST_P(AcquireTest, LeadsWhenAndOnlyWhenTheLeaseIsFree) {
  const AcquireCase& c = GetParam();
  auto client = std::make_shared<FakeLeaseClient>();
  if (c.spec) client->put(a_lease(*c.spec));
  Replica a(client, "a");
  int ticks = 0;
  run_for({&a}, seconds(60), [&] {
    if (c.holder_keeps_renewing && ++ticks % 20 == 0) {
      json spec = stored_spec(*client);
      spec["renewTime"] = format_micro_time(kWallStart + milliseconds(ticks * 100));
      client->put(a_lease(spec));
    }
  });
  if (!c.want_leading_at) {
    EXPECT_EQ(a.started, 0);
    EXPECT_EQ(stored_spec(*client)["holderIdentity"], "other");
    return;
  }
  EXPECT_EQ(a.started, 1);
  EXPECT_EQ(a.started_at, *c.want_leading_at);
  EXPECT_TRUE(a.leading());
  const json spec = stored_spec(*client);
  EXPECT_EQ(spec["holderIdentity"], "a");
  EXPECT_EQ(spec["leaseDurationSeconds"], 15);
  EXPECT_EQ(spec["leaseTransitions"], c.want_transitions);
  EXPECT_EQ(spec["renewTime"], "2026-09-21T14:14:18.000000Z") << "renewed at 58 s";
  if (c.want_acquire_time_kept) {
    EXPECT_EQ(spec["acquireTime"], (*c.spec)["acquireTime"]);
  } else {
    EXPECT_EQ(
        spec["acquireTime"],
        format_micro_time(kWallStart + std::chrono::duration_cast<seconds>(*c.want_leading_at)));
  }
}

const json kOldTimes = {{"acquireTime", "2020-01-01T00:00:00.000000Z"},
                        {"renewTime", "2020-01-01T00:00:05.000000Z"}};

json spec_with(json fields) {
  json spec = kOldTimes;
  spec.update(fields);
  return spec;
}

INSTANTIATE_TEST_SUITE_P(
    LeaderElection, AcquireTest,
    ::testing::Values(
        AcquireCase{"creates_an_absent_lease_and_leads_at_once", std::nullopt, false, seconds(0), 0,
                    false},
        AcquireCase{"takes_a_released_lease_at_once",
                    spec_with({{"holderIdentity", ""},
                               {"leaseDurationSeconds", 1},
                               {"leaseTransitions", 3}}),
                    false, seconds(0), 4, false},
        AcquireCase{"resumes_its_own_lease_after_a_restart_without_a_transition",
                    spec_with({{"holderIdentity", "a"},
                               {"leaseDurationSeconds", 15},
                               {"leaseTransitions", 2}}),
                    false, seconds(0), 2, true},
        // The holder's timestamps say it expired years ago; only our own clock counts.
        AcquireCase{"waits_a_full_lease_by_its_own_clock_though_the_timestamps_are_old",
                    spec_with({{"holderIdentity", "other"},
                               {"leaseDurationSeconds", 15},
                               {"leaseTransitions", 5}}),
                    false, seconds(16), 6, false},
        AcquireCase{"waits_for_the_lease_duration_the_holder_wrote_not_its_own",
                    spec_with({{"holderIdentity", "other"},
                               {"leaseDurationSeconds", 30},
                               {"leaseTransitions", 5}}),
                    false, seconds(30), 6, false},
        AcquireCase{"never_takes_a_lease_whose_holder_keeps_renewing",
                    spec_with({{"holderIdentity", "other"},
                               {"leaseDurationSeconds", 15},
                               {"leaseTransitions", 5}}),
                    true, std::nullopt, 5, false}),
    [](const auto& param_info) { return param_info.param.name; });

// --- two replicas ----------------------------------------------------------------------

TEST(LeaderElection, OfTwoCandidatesOnlyOneLeads) {
  auto client = std::make_shared<FakeLeaseClient>();
  Replica a(client, "a"), b(client, "b");
  run_for({&a, &b}, seconds(60),
          [&] { ASSERT_LE(int(a.leading()) + int(b.leading()), 1) << "two leaders"; });
  EXPECT_TRUE(a.leading());
  EXPECT_EQ(b.started, 0);
  EXPECT_EQ(client->writes(), 30) << "one create, then a renewal every 2 s";
}

TEST(LeaderElection, FailsOverOnceTheCrashedLeadersLeaseExpiresByTheSuccessorsClock) {
  auto client = std::make_shared<FakeLeaseClient>();
  Replica a(client, "a"), b(client, "b");
  run_for({&a, &b}, seconds(10));  // a renews last at 8 s, then crashes
  ASSERT_TRUE(a.leading());
  run_for({&b}, seconds(20));
  EXPECT_EQ(b.started, 1);
  EXPECT_EQ(b.started_at, seconds(24)) << "the first retry at or after 8 s + 15 s";
  EXPECT_EQ(stored_spec(*client)["leaseTransitions"], 1);
}

TEST(LeaderElection, FailsOverAtTheNextRetryWhenTheLeaderReleases) {
  auto client = std::make_shared<FakeLeaseClient>();
  Replica a(client, "a"), b(client, "b");
  run_for({&a, &b}, seconds(9));
  ASSERT_TRUE(a.elector->release());
  EXPECT_EQ(a.stopped, 1);
  EXPECT_FALSE(a.leading());
  EXPECT_EQ(stored_spec(*client)["holderIdentity"], "");
  EXPECT_EQ(stored_spec(*client)["leaseDurationSeconds"], 1);
  run_for({&b}, seconds(3));  // a released on its way out (run() returns after release)
  EXPECT_EQ(b.started, 1);
  EXPECT_EQ(b.started_at, seconds(10)) << "b's next retry after the release at 9 s";
  EXPECT_EQ(stored_spec(*client)["leaseTransitions"], 1);
}

TEST(LeaderElection, ALeaderThatCannotRenewStopsBeforeAnotherCanTakeOver) {
  auto client = std::make_shared<FakeLeaseClient>();
  std::atomic<bool> a_cut_off{false};
  client->set_interceptor(
      [&](const std::string& method, const json& lease) -> std::optional<LeaseClient::Reply> {
        if (a_cut_off && method == "update" && lease["spec"]["holderIdentity"] == "a") {
          return LeaseClient::Reply{LeaseClient::Outcome::kError, nullptr, "connection refused"};
        }
        return std::nullopt;
      });
  Replica a(client, "a"), b(client, "b");
  run_for({&a, &b}, seconds(10));  // a renews last at 8 s
  a_cut_off = true;
  run_for({&a, &b}, seconds(20), [&] {
    if (b.leading()) {
      ASSERT_FALSE(a.leading()) << "two leaders";
    }
  });
  EXPECT_EQ(a.stopped, 1);
  EXPECT_EQ(a.stopped_at, seconds(18)) << "the renew deadline: 8 s + 10 s";
  EXPECT_EQ(b.started, 1);
  EXPECT_EQ(b.started_at, seconds(24));
}

TEST(LeaderElection, ALeaderThatSeesAnotherHolderStopsAtOnce) {
  auto client = std::make_shared<FakeLeaseClient>();
  Replica a(client, "a");
  run_for({&a}, seconds(5));
  client->put(a_lease(spec_with({{"holderIdentity", "intruder"}, {"leaseDurationSeconds", 15}})));
  run_for({&a}, seconds(2));
  EXPECT_EQ(a.stopped, 1);
  EXPECT_EQ(a.stopped_at, seconds(6)) << "its next renewal, not its renew deadline";
  EXPECT_EQ(a.elector->observed_leader(), "intruder");
}

// A replica's view of the shared Lease whose next read stalls: `stall` runs while it is on
// its way (time passes for every replica), then the read answers what is stored by then.
class StallingLeaseClient final : public LeaseClient {
 public:
  explicit StallingLeaseClient(std::shared_ptr<FakeLeaseClient> store) : store_(std::move(store)) {}
  void stall_next_get(std::function<void()> stall) { stall_ = std::move(stall); }
  Reply get(const std::string& ns, const std::string& name) override {
    if (auto stall = std::exchange(stall_, nullptr)) stall();
    return store_->get(ns, name);
  }
  Reply create(const json& lease) override { return store_->create(lease); }
  Reply update(const json& lease) override { return store_->update(lease); }

 private:
  std::shared_ptr<FakeLeaseClient> store_;
  std::function<void()> stall_;
};

// Issue #19 item 9: a standby's Lease read that stalled (a 429 with Retry-After 30, retried
// inside the call) was judged by the time the read started: the next round read the same
// record again, found it 30 s old by that clock, and took the Lease from a healthy leader;
// both wrote statuses. The observed time is taken when the reply came, as client-go does.
TEST(LeaderElection, AStalledReadIsJudgedByWhenItsReplyCame) {
  auto store = std::make_shared<FakeLeaseClient>();
  auto b_view = std::make_shared<StallingLeaseClient>(store);
  Replica a(store, "a"), b(b_view, "b");
  run_for({&a, &b}, seconds(10));
  ASSERT_TRUE(a.leading());
  b_view->stall_next_get([&] {
    // 30.5 s for both while b's read is on its way (not a multiple of a's 2 s renewals,
    // so b's next read finds the record its stalled read returned).
    for (int i = 0; i < 305; ++i) {
      a.tick();
      a.advance(milliseconds(100));
      b.advance(milliseconds(100));
    }
  });
  run_for({&a, &b}, seconds(30),
          [&] { ASSERT_FALSE(a.leading() && b.leading()) << "two leaders"; });
  EXPECT_EQ(b.started, 0) << "b took the Lease from a healthy leader";
  EXPECT_EQ(a.stopped, 0);
  EXPECT_TRUE(a.leading());
}

TEST(LeaderElection, AConflictOnRenewalIsRetriedWithoutLosingTheLead) {
  auto client = std::make_shared<FakeLeaseClient>();
  Replica a(client, "a");
  run_for({&a}, seconds(1));
  int conflicts = 0;
  client->set_interceptor(
      [&](const std::string& method, const json&) -> std::optional<LeaseClient::Reply> {
        if (method == "update" && conflicts++ < 2) {
          return LeaseClient::Reply{LeaseClient::Outcome::kConflict, nullptr, "modified"};
        }
        return std::nullopt;
      });
  run_for({&a}, seconds(10));
  EXPECT_EQ(conflicts, 2 + 3) << "two conflicts at 2 s and 4 s, then renewals at 6, 8, 10 s";
  EXPECT_EQ(a.stopped, 0);
  EXPECT_TRUE(a.leading());
}

TEST(LeaderElection, OfTwoCandidatesRacingForAReleasedLeaseTheLoserGetsAConflict) {
  auto client = std::make_shared<FakeLeaseClient>();
  client->put(a_lease(spec_with({{"holderIdentity", ""}, {"leaseDurationSeconds", 1}})));
  Replica a(client, "a"), b(client, "b");
  bool raced = false;
  std::optional<LeaseClient::Outcome> a_update;
  client->set_interceptor(
      [&](const std::string& method, const json& lease) -> std::optional<LeaseClient::Reply> {
        if (method == "update" && lease["spec"]["holderIdentity"] == "a" && !raced) {
          raced = true;
          b.tick();  // b reads the same version and writes first
          const LeaseClient::Reply reply = client->update(lease);
          a_update = reply.outcome;
          return reply;
        }
        return std::nullopt;
      });
  a.tick();
  EXPECT_EQ(a_update, LeaseClient::Outcome::kConflict);
  EXPECT_FALSE(a.leading());
  EXPECT_TRUE(b.leading());
  EXPECT_EQ(stored_spec(*client)["holderIdentity"], "b");
}

// --- run() and stop() on a thread --------------------------------------------------------

TEST(LeaderElection, StopEndsRunStopsLeadingAndReleasesTheLease) {
  auto client = std::make_shared<FakeLeaseClient>();
  Replica a(client, "a");
  std::thread runner([&] { a.elector->run(); });
  ASSERT_TRUE(commgate::testing::wait_until([&] { return a.started == 1; }));
  a.elector->stop();
  runner.join();
  EXPECT_EQ(a.stopped, 1);
  EXPECT_EQ(stored_spec(*client)["holderIdentity"], "");
  EXPECT_EQ(stored_spec(*client)["leaseTransitions"], 0);
}

// --- options and formats --------------------------------------------------------------

TEST(LeaderElection, RejectsOptionsThatBreakTheSafetyInequality) {
  struct Case {
    std::string name;
    std::function<void(LeaderElectionOptions&)> change;
    std::string want_error;
  };
  const std::vector<Case> cases = {
      {"defaults_are_valid", [](LeaderElectionOptions&) {}, ""},
      {"renew_deadline_as_long_as_the_lease",
       [](LeaderElectionOptions& o) { o.renew_deadline = o.lease_duration; },
       "lease_duration must exceed renew_deadline"},
      {"retry_period_as_long_as_the_renew_deadline",
       [](LeaderElectionOptions& o) { o.retry_period = o.renew_deadline; },
       "renew_deadline must exceed retry_period"},
      {"no_identity", [](LeaderElectionOptions& o) { o.identity.clear(); }, "identity is empty"},
      {"a_fractional_lease",
       [](LeaderElectionOptions& o) { o.lease_duration = milliseconds(15500); },
       "whole number of seconds"},
  };
  for (const Case& c : cases) {
    LeaderElectionOptions o;
    o.lease_namespace = kNamespace;
    o.lease_name = kName;
    o.identity = "a";
    c.change(o);
    std::string error;
    try {
      validate(o);
    } catch (const std::invalid_argument& e) {
      error = e.what();
    }
    if (c.want_error.empty()) {
      EXPECT_EQ(error, "") << c.name;
    } else {
      EXPECT_NE(error.find(c.want_error), std::string::npos) << c.name << ": " << error;
    }
  }
}

TEST(LeaderElection, FormatsMicroTimeInUtcWithSixDigits) {
  EXPECT_EQ(format_micro_time(kWallStart), "2026-09-21T14:13:20.000000Z");
  EXPECT_EQ(format_micro_time(kWallStart + std::chrono::microseconds(123456)),
            "2026-09-21T14:13:20.123456Z");
  EXPECT_EQ(format_micro_time(std::chrono::system_clock::time_point(seconds(0))),
            "1970-01-01T00:00:00.000000Z");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::kube
