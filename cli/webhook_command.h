// `commgate webhook`: the admission webhook over HTTPS (docs/webhook.md). Runs until
// SIGTERM or SIGINT, then stops gracefully.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace commgate {

int run_webhook(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace commgate
