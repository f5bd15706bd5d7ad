// What a reconcile returns, as kube-runtime's `Result<Action, Error>`: either an Action
// (requeue after a delay, or wait for the next change) or an error (retried with the
// queue's backoff unless terminal). Both types are [[nodiscard]]: a reconcile step that
// drops its result does not compile quietly under -Wall.
//
// The runtime turns a result into queue operations in ONE place:
// apply_requeue_rules() in kube/runner.h. Reconcilers never touch the queue.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "kube/clock.h"

namespace commgate::kube {

class [[nodiscard]] Action {
 public:
  // Reconcile again after `delay` (a poll: a probe still running), whatever changes.
  static Action requeue_after(Clock::duration delay) { return Action(delay); }
  // Nothing to do until the object (or something it watches) changes.
  static Action await_change() { return Action(std::nullopt); }

  // The delay of requeue_after; nullopt for await_change.
  std::optional<Clock::duration> requeue_delay() const { return delay_; }

  friend bool operator==(const Action&, const Action&) = default;

 private:
  explicit Action(std::optional<Clock::duration> delay) : delay_(delay) {}
  std::optional<Clock::duration> delay_;
};

struct [[nodiscard]] ReconcileError {
  // Worth retrying with backoff (an API error, a timeout).
  static ReconcileError retryable(std::string message) {
    return ReconcileError{std::move(message), false};
  }
  // Retrying cannot help (an invalid spec): wait for the object to change instead.
  static ReconcileError terminal(std::string message) {
    return ReconcileError{std::move(message), true};
  }

  std::string message;
  bool is_terminal = false;
};

// Action or ReconcileError, built implicitly from either (`return Action::await_change();`,
// `return ReconcileError::retryable("...");`).
class [[nodiscard]] ReconcileResult {
 public:
  ReconcileResult(Action action) : value_(std::move(action)) {}        // NOLINT
  ReconcileResult(ReconcileError error) : value_(std::move(error)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<Action>(value_); }
  // Precondition: ok().
  const Action& action() const { return std::get<Action>(value_); }
  // Precondition: !ok().
  const ReconcileError& error() const { return std::get<ReconcileError>(value_); }

 private:
  std::variant<Action, ReconcileError> value_;
};

}  // namespace commgate::kube
