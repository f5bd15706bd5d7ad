// The runner and the requeue rules: the rules as a table against a real queue on the
// fake clock; the runner's concurrency bound, graceful stop and counters with a
// reconcile function that blocks on a gate the test opens.
#include "kube/runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>

#include "tests/support/wait.h"

namespace commgate::kube {
namespace COMMGATE_TEST_UNIT {

using commgate::testing::wait_until;
using std::chrono::milliseconds;
using std::chrono::seconds;

// An Action comes only from its two builders (a reconcile cannot return "nothing").
// Dropping an Action or a ReconcileResult is a -Wunused-result warning ([[nodiscard]]).
static_assert(!std::is_default_constructible_v<Action>);
static_assert(!std::is_constructible_v<Action, std::optional<Clock::duration>>);
static_assert(!std::is_default_constructible_v<ReconcileResult>);

struct RequeueCase {
  std::string name;
  int failures_before = 0;  // the key's backoff before this reconcile
  std::function<ReconcileResult()> result;
  int want_failures = 0;
  std::optional<Clock::duration> want_ready_in;  // nullopt: not requeued
};

void PrintTo(const RequeueCase& c, std::ostream* os) {
  *os << c.name;
}

class RequeueRulesTest : public ::testing::TestWithParam<RequeueCase> {};

TEST_P(RequeueRulesTest, MapsTheResultToOneQueueOperation) {
  const RequeueCase& c = GetParam();
  auto clock = std::make_shared<FakeClock>();
  WorkQueue queue(clock);
  for (int i = 0; i < c.failures_before; ++i) queue.add_rate_limited("ns/a");
  clock->advance(seconds(2000));  // past any backoff; the bucket refills
  if (c.failures_before == 0) queue.add("ns/a");
  ASSERT_EQ(queue.get(), "ns/a");  // held by this "worker", as in the runner

  apply_requeue_rules(queue, "ns/a", c.result());
  queue.done("ns/a");

  EXPECT_EQ(queue.failures("ns/a"), c.want_failures);
  EXPECT_EQ(queue.ready_in("ns/a"), c.want_ready_in);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RequeueRulesTest,
    ::testing::Values(
        RequeueCase{"ARetryableErrorBacksOffOneStepFurther", 2,
                    [] { return ReconcileError::retryable("409 on status"); }, 3, milliseconds(20)},
        RequeueCase{"AFirstRetryableErrorWaitsFiveMilliseconds", 0,
                    [] { return ReconcileError::retryable("timeout"); }, 1, milliseconds(5)},
        RequeueCase{"ATerminalErrorForgetsAndWaitsForAChange", 2,
                    [] { return ReconcileError::terminal("invalid spec"); }, 0, std::nullopt},
        RequeueCase{"RequeueAfterUsesItsOwnDelayAndForgetsTheBackoff", 5,
                    [] { return Action::requeue_after(seconds(30)); }, 0, seconds(30)},
        RequeueCase{"RequeueAfterZeroQueuesAtOnce", 0,
                    [] { return Action::requeue_after(Clock::duration::zero()); }, 0,
                    Clock::duration::zero()},
        RequeueCase{"AwaitChangeForgetsAndDoesNotRequeue", 3, [] { return Action::await_change(); },
                    0, std::nullopt}),
    [](const auto& test_case) { return test_case.param.name; });

// A reconcile function that records how many run at once and blocks until open().
class Gate {
 public:
  ReconcileResult reconcile(const std::string& key) {
    {
      std::unique_lock lock(mu_);
      ++running_;
      max_running_ = std::max(max_running_, running_);
      seen_.push_back(key);
      cv_.wait(lock, [this] { return open_; });
      --running_;
      ++finished_;
    }
    return Action::await_change();
  }
  void open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  int running() const {
    std::lock_guard lock(mu_);
    return running_;
  }
  int max_running() const {
    std::lock_guard lock(mu_);
    return max_running_;
  }
  int finished() const {
    std::lock_guard lock(mu_);
    return finished_;
  }
  std::vector<std::string> seen() const {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int running_ = 0;
  int max_running_ = 0;
  int finished_ = 0;
  std::vector<std::string> seen_;
};

class RunnerTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  std::shared_ptr<WorkQueue> queue_ = std::make_shared<WorkQueue>(clock_);
};

TEST_F(RunnerTest, NeverRunsMoreReconcilesAtOnceThanItsConcurrency) {
  Gate gate;
  Runner runner(queue_, clock_, [&](const std::string& key) { return gate.reconcile(key); },
                {.concurrency = 3, .metrics_prefix = "test"});
  for (int i = 0; i < 20; ++i) queue_->add("ns/job-" + std::to_string(i));
  runner.start();

  ASSERT_TRUE(wait_until([&] { return gate.running() == 3; }));
  EXPECT_EQ(runner.counters().in_flight, 3u);
  EXPECT_EQ(runner.counters().queue_depth, 17u);
  gate.open();
  ASSERT_TRUE(wait_until([&] { return runner.counters().reconciles == 20; }));
  EXPECT_EQ(gate.max_running(), 3);
  EXPECT_EQ(gate.finished(), 20);
  runner.stop();
}

TEST_F(RunnerTest, StopFinishesTheReconcileInFlightAndStartsNoOther) {
  Gate gate;
  Runner runner(queue_, clock_, [&](const std::string& key) { return gate.reconcile(key); },
                {.concurrency = 1, .metrics_prefix = "test"});
  queue_->add("ns/first");
  queue_->add("ns/second");
  runner.start();
  ASSERT_TRUE(wait_until([&] { return gate.running() == 1; }));

  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    runner.stop();
    stopped = true;
  });
  ASSERT_TRUE(wait_until([&] { return queue_->shutting_down(); }));
  EXPECT_FALSE(stopped) << "stop returned with a reconcile still running";
  gate.open();
  stopper.join();

  EXPECT_EQ(gate.finished(), 1);
  EXPECT_EQ(gate.seen(), std::vector<std::string>{"ns/first"});
  EXPECT_EQ(runner.counters().reconciles, 1u);
  EXPECT_EQ(runner.counters().in_flight, 0u);
  runner.stop();  // idempotent
}

TEST_F(RunnerTest, AppliesTheRequeueRulesToWhatReconcileReturns) {
  std::atomic<int> polls{0};
  Runner runner(queue_, clock_,
                [&](const std::string& key) -> ReconcileResult {
                  if (key == "ns/poll") {
                    ++polls;
                    return Action::requeue_after(seconds(10));
                  }
                  if (key == "ns/throws") throw std::runtime_error("boom");
                  return ReconcileError::retryable("conflict");
                },
                {.concurrency = 2, .metrics_prefix = "test"});
  queue_->add("ns/poll");
  queue_->add("ns/throws");
  queue_->add("ns/fails");
  runner.start();

  ASSERT_TRUE(wait_until([&] { return runner.counters().reconciles == 3; }));
  EXPECT_EQ(polls, 1);
  EXPECT_EQ(queue_->ready_in("ns/poll"), seconds(10));
  EXPECT_EQ(queue_->failures("ns/throws"), 1) << "an exception is a retryable error";
  EXPECT_EQ(queue_->failures("ns/fails"), 1);
  EXPECT_EQ(runner.counters().errors, 2u);

  clock_->advance(seconds(10));
  ASSERT_TRUE(wait_until([&] { return polls == 2; }));
  runner.stop();
}

TEST_F(RunnerTest, ExposesCountersAsPrometheusTextUnderTheCallersPrefix) {
  Runner runner(queue_, clock_,
                [&](const std::string& key) -> ReconcileResult {
                  clock_->advance(milliseconds(250));  // the reconcile "takes" 250 ms of fake time
                  if (key == "ns/bad") return ReconcileError::retryable("500");
                  return Action::await_change();
                },
                {.concurrency = 1, .metrics_prefix = "commgate_trainingjob"});
  queue_->add("ns/good");
  queue_->add("ns/bad");
  runner.start();
  ASSERT_TRUE(wait_until([&] { return runner.counters().reconciles == 2; }));
  runner.stop();

  const std::string text = runner.metrics_text();
  for (const std::string want : {
           "# TYPE commgate_trainingjob_reconciles_total counter\n",
           "\ncommgate_trainingjob_reconciles_total 2\n",
           "\ncommgate_trainingjob_reconcile_errors_total 1\n",
           "# TYPE commgate_trainingjob_reconcile_duration_seconds summary\n",
           "\ncommgate_trainingjob_reconcile_duration_seconds_sum 0.5\n",
           "\ncommgate_trainingjob_reconcile_duration_seconds_count 2\n",
           "\ncommgate_trainingjob_reconciles_in_flight 0\n",
           "\ncommgate_trainingjob_work_queue_depth 0\n",
       }) {
    EXPECT_NE(text.find(want), std::string::npos) << "missing " << want << "in\n" << text;
  }
  // stop() shut the queue down, which drops the failed key's backoff wait.
  EXPECT_NE(text.find("\ncommgate_trainingjob_work_queue_delayed 0\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace commgate::kube
