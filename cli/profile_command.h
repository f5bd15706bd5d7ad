// `commgate profile`: the CommProfile manifest the operator would write for a node pool
// from a commgate-probe result, for admins who probe by hand (docs/cli.md).
#pragma once

#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "core/comm_profile.h"
#include "core/probe_result.h"

namespace commgate {

int run_profile(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// "k=v,k2=v2" as a nodeSelector. Throws UsageError naming the pair that is not a
// Kubernetes label (key: optional DNS-subdomain prefix and '/', then a name of at most 63
// characters; value: at most 63, possibly empty) or a key given twice.
std::map<std::string, std::string> parse_node_selector(const std::string& text);

// The profile the operator writes for the pool `node_selector` after `probe`: named
// pool_name(node_selector), its status record_probe_result's.
CommProfile profile_from_probe(const ProbeResult& probe,
                               const std::map<std::string, std::string>& node_selector);

}  // namespace commgate
