#include "probe-job/probe_config.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "core/probe_result.h"
#include "core/quantity.h"

namespace commgate::probe {
namespace {

struct Parser {
  ProbeConfig& cfg;
  std::string error;

  bool fail(const std::string& message) {
    if (error.empty()) error = message;
    return false;
  }

  bool integer(const std::string& what, const std::string& text, long min, long max, int* out) {
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0) {
      return fail(what + ": must be an integer, got \"" + text + "\"");
    }
    if (v < min || v > max) {
      return fail(what + ": must be in [" + std::to_string(min) + ", " + std::to_string(max) +
                  "], got " + text);
    }
    *out = static_cast<int>(v);
    return true;
  }

  bool quantity(const std::string& what, const std::string& text, double min, double* out) {
    std::string why;
    auto v = parse_quantity(text, &why);
    if (!v) {
      // parse_quantity's reason may quote the text already.
      const bool quoted = why.find("got ") != std::string::npos;
      return fail(what + ": " + (why.empty() ? "not a quantity" : why) +
                  (quoted ? "" : ", got \"" + text + "\""));
    }
    if (!(*v >= min) || !std::isfinite(*v)) {
      std::ostringstream m;
      m << what << ": must be >= " << min << ", got \"" << text << "\"";
      return fail(m.str());
    }
    *out = *v;
    return true;
  }

  bool seconds(const std::string& what, const std::string& text, double* out) {
    // Plain seconds ("30", "2.5") or a Go duration ("90s", "5m").
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (!text.empty() && *end == '\0' && std::isfinite(v) && v > 0) {
      *out = v;
      return true;
    }
    std::string why;
    auto d = parse_duration(text, &why);
    if (!d || d->count() <= 0) {
      return fail(what +
                  ": must be a positive number of seconds or a duration such as 90s, got \"" +
                  text + "\"");
    }
    *out = static_cast<double>(d->count()) / 1e9;
    return true;
  }

  bool optimizer(const std::string& what, const std::string& text, std::string* out) {
    for (const char* name : kOptimizers) {
      if (text == name) {
        *out = text;
        return true;
      }
    }
    std::string names;
    for (const char* name : kOptimizers) names += (names.empty() ? "" : ", ") + std::string(name);
    return fail(what + ": must be one of " + names + ", got \"" + text + "\"");
  }

  bool gradient_dtype(const std::string& what, const std::string& text, std::string* out) {
    for (const char* name : kGradientDtypes) {
      if (text == name) {
        *out = text;
        return true;
      }
    }
    return fail(what + ": must be one of fp32, fp16, bf16, got \"" + text + "\"");
  }

  bool shape(const std::string& what, const std::string& text, std::vector<int64_t>* out) {
    out->clear();
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
      int dim = 0;
      if (!integer(what + " dimension", item, 1, std::numeric_limits<int>::max(), &dim)) {
        return false;
      }
      out->push_back(dim);
    }
    if (out->empty()) return fail(what + ": must be a comma-separated list such as 32,3,224,224");
    return true;
  }

  // "params=5M,batch=64,optimizer=sgd,dtype=fp16": params required, the others as their
  // flags' defaults.
  bool synthetic_model(const std::string& what, const std::string& text, SyntheticModel* out) {
    *out = SyntheticModel{};
    bool has_params = false;
    std::vector<std::string> seen;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
      const auto eq = item.find('=');
      const std::string key = item.substr(0, eq);
      if (std::find(seen.begin(), seen.end(), key) != seen.end())
        return fail(what + ": " + key + " given twice in \"" + text + "\"");
      seen.push_back(key);
      const std::string v = eq == std::string::npos ? "" : item.substr(eq + 1);
      if (eq == std::string::npos)
        return fail(what + ": \"" + item +
                    "\" is not key=value (params=Q,batch=N,optimizer=NAME,dtype=D)");
      if (key == "params") {
        if (!quantity(what + " params", v, 1, &out->parameters)) return false;
        has_params = true;
      } else if (key == "batch") {
        if (!integer(what + " batch", v, 1, 1 << 20, &out->batch_size)) return false;
      } else if (key == "optimizer") {
        if (!optimizer(what + " optimizer", v, &out->optimizer)) return false;
      } else if (key == "dtype") {
        if (!gradient_dtype(what + " dtype", v, &out->gradient_dtype)) return false;
      } else {
        return fail(what + ": unknown key \"" + key + "\" (params, batch, optimizer, dtype)");
      }
    }
    if (!has_params) return fail(what + ": params=Q is required, got \"" + text + "\"");
    return true;
  }
};

}  // namespace

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

std::string probe_usage() {
  return R"(usage: commgate-probe [flags]

Measures the all-reduce bandwidth between the ranks of a job (Gloo on CPU, NCCL on GPU),
the compute step of its model, and a DDP-style overlapped step; prints a ProbeResult
(docs/probe.md) as JSON on stdout. One process per node, torchrun-style environment.

World (flags override MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE):
  --master-addr HOST        rendezvous store address (default 127.0.0.1)
  --master-port PORT        rendezvous store port (default 29500)
  --rank R --world-size N   this rank and the number of ranks
  --local-ranks N           spawn N ranks on this machine over loopback; stdout is rank 0's JSON
  --backend auto|gloo|nccl  default auto: nccl when a GPU is visible, else gloo
  --interface IFNAME        network interface for Gloo (default GLOO_SOCKET_IFNAME, else the
                            interface whose address routes to the master)
All-reduce sweep:
  --min-bytes Q --max-bytes Q   sizes from Q (default 4Ki) up to min(gradient bytes, 64Mi)
  --size-factor F           ratio between sizes (default 4)
  --warmup N --iters N      untimed and timed iterations per size (default 1, 5)
Compute:
  --params Q                synthetic MLP with Q parameters (default 25M; 5M, 1.5G, 7e9 ...)
  --batch-size N            default 32
  --optimizer NAME          the job's optimizer: sgd, sgd-momentum, adam, adamw, adagrad,
                            rmsprop (default adamw)
  --torchscript PATH --input-shape D0,D1,...   time a TorchScript module instead
  --gradient-dtype fp32|fp16|bf16  what DDP all-reduces (default fp32; fp16/bf16: its
                            compression hooks, which the DDP-style step applies to its buckets)
  --also-model params=Q,batch=N,optimizer=NAME,dtype=D  time this synthetic MLP too, after
                            the first model (repeatable, at most 2): one probe for several
                            jobs' models
  --compute-warmup N --compute-iters N          default 2, 10
  --threads N               torch threads (default: cores available / local ranks)
  --no-compute              measure the link only (no compute, no DDP step)
DDP-style step:
  --bucket-cap Q            default 25Mi      --first-bucket Q   default 1Mi
  --ddp-warmup N --ddp-iters N                default 1, 5
  --ddp-min-seconds S       more timed pairs while a step is short, until every rank has
                            timed S seconds of them (seconds or a duration such as 5s;
                            default 3; at most 20x --ddp-iters; 0: exactly --ddp-iters)
Output:
  --output FILE             also write the full JSON here (rank 0; exit 1 when it cannot be)
  --termination-log FILE    compact JSON (<= 4096 bytes); default /dev/termination-log when
                            writable; "" disables
  --note TEXT               provenance, copied into the result
  --timeout S               bounds the whole run (default 300; seconds or 5m)
  --rendezvous-timeout S    bounds the rendezvous (default: the rest of --timeout)
  --quiet                   no human summary on stderr
Exit codes: 0 ok, 1 a stage failed, 2 bad flags, 3 rendezvous failed, 4 timed out,
5 all-reduce data check failed.
)";
}

ParseOutcome parse_probe_config(const std::vector<std::string>& args, const EnvLookup& env) {
  ParseOutcome outcome;
  ProbeConfig cfg;
  Parser p{cfg, {}};

  // Environment first; flags below override.
  auto from_env = [&](const char* name, auto&& apply) {
    if (auto v = env(name)) apply(std::string(name), *v);
  };
  from_env("MASTER_ADDR", [&](const std::string&, const std::string& v) { cfg.master_addr = v; });
  from_env("MASTER_PORT", [&](const std::string& n, const std::string& v) {
    p.integer(n, v, 1, 65535, &cfg.master_port);
  });
  from_env("RANK", [&](const std::string& n, const std::string& v) {
    p.integer(n, v, 0, 1 << 20, &cfg.rank);
  });
  from_env("WORLD_SIZE", [&](const std::string& n, const std::string& v) {
    p.integer(n, v, 1, 1 << 20, &cfg.world_size);
  });
  from_env("LOCAL_RANK", [&](const std::string& n, const std::string& v) {
    p.integer(n, v, 0, 1 << 20, &cfg.local_rank);
  });
  from_env("LOCAL_WORLD_SIZE", [&](const std::string& n, const std::string& v) {
    p.integer(n, v, 1, 1 << 20, &cfg.local_world_size);
  });
  from_env("COMMGATE_PROBE_LOCAL_RANKS", [&](const std::string& n, const std::string& v) {
    p.integer(n, v, 1, 1 << 20, &cfg.ranks_sharing_memory);
  });
  from_env("GLOO_SOCKET_IFNAME",
           [&](const std::string&, const std::string& v) { cfg.interface_name = v; });

  bool rank_set = false;
  for (size_t i = 0; i < args.size() && p.error.empty(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> inline_value;
    if (auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    auto value = [&]() -> std::optional<std::string> {
      if (inline_value) return inline_value;
      if (i + 1 >= args.size()) {
        p.fail(flag + ": needs a value");
        return std::nullopt;
      }
      return args[++i];
    };
    auto no_value = [&]() {
      if (inline_value) p.fail(flag + ": takes no value");
    };
    auto int_flag = [&](long min, long max, int* out) {
      if (auto v = value()) p.integer(flag, *v, min, max, out);
    };
    auto qty_flag = [&](double min, double* out) {
      if (auto v = value()) p.quantity(flag, *v, min, out);
    };

    if (flag == "--help" || flag == "-h") {
      outcome.help = true;
      return outcome;
    } else if (flag == "--master-addr") {
      if (auto v = value()) cfg.master_addr = *v;
    } else if (flag == "--master-port") {
      int_flag(1, 65535, &cfg.master_port);
    } else if (flag == "--rank") {
      int_flag(0, 1 << 20, &cfg.rank);
      rank_set = true;
    } else if (flag == "--world-size") {
      int_flag(1, 1 << 20, &cfg.world_size);
    } else if (flag == "--local-ranks") {
      int_flag(1, 64, &cfg.local_ranks);
    } else if (flag == "--backend") {
      if (auto v = value()) {
        if (*v == "auto")
          cfg.backend = BackendChoice::kAuto;
        else if (*v == "gloo")
          cfg.backend = BackendChoice::kGloo;
        else if (*v == "nccl")
          cfg.backend = BackendChoice::kNccl;
        else
          p.fail("--backend: must be one of auto, gloo, nccl, got \"" + *v + "\"");
      }
    } else if (flag == "--interface") {
      if (auto v = value()) cfg.interface_name = *v;
    } else if (flag == "--min-bytes") {
      qty_flag(4, &cfg.min_bytes);
    } else if (flag == "--max-bytes") {
      qty_flag(4, &cfg.max_bytes);
    } else if (flag == "--size-factor") {
      qty_flag(1.1, &cfg.size_factor);
    } else if (flag == "--warmup") {
      int_flag(0, 1000, &cfg.warmup);
    } else if (flag == "--iters") {
      int_flag(1, 100000, &cfg.iterations);
    } else if (flag == "--params") {
      qty_flag(1, &cfg.parameters);
    } else if (flag == "--batch-size") {
      int_flag(1, 1 << 20, &cfg.batch_size);
    } else if (flag == "--optimizer") {
      if (auto v = value()) p.optimizer(flag, *v, &cfg.optimizer);
    } else if (flag == "--gradient-dtype") {
      if (auto v = value()) p.gradient_dtype(flag, *v, &cfg.gradient_dtype);
    } else if (flag == "--also-model") {
      SyntheticModel m;
      if (auto v = value(); v && p.synthetic_model(flag, *v, &m)) cfg.also_models.push_back(m);
    } else if (flag == "--torchscript") {
      if (auto v = value()) cfg.torchscript = *v;
    } else if (flag == "--input-shape") {
      if (auto v = value()) p.shape(flag, *v, &cfg.input_shape);
    } else if (flag == "--compute-warmup") {
      int_flag(0, 1000, &cfg.compute_warmup);
    } else if (flag == "--compute-iters") {
      int_flag(1, 100000, &cfg.compute_iterations);
    } else if (flag == "--threads") {
      int_flag(1, 4096, &cfg.threads);
    } else if (flag == "--no-compute") {
      no_value();
      cfg.skip_compute = true;
    } else if (flag == "--bucket-cap") {
      qty_flag(4, &cfg.bucket_cap_bytes);
    } else if (flag == "--first-bucket") {
      qty_flag(4, &cfg.first_bucket_bytes);
    } else if (flag == "--ddp-warmup") {
      int_flag(0, 1000, &cfg.ddp_warmup);
    } else if (flag == "--ddp-iters") {
      int_flag(1, 100000, &cfg.ddp_iterations);
    } else if (flag == "--ddp-min-seconds") {
      if (auto v = value()) {
        char* end = nullptr;
        if (!v->empty() && std::strtod(v->c_str(), &end) == 0 && *end == '\0') {
          cfg.ddp_min_timed_seconds = 0;  // "0", "0.0": exactly --ddp-iters
        } else if (const bool first_error = p.error.empty();
                   !p.seconds(flag, *v, &cfg.ddp_min_timed_seconds) && first_error) {
          p.error = flag + ": must be 0 (exactly --ddp-iters) or a positive number of seconds " +
                    "or a duration such as 5s, got \"" + *v + "\"";
        }
      }
    } else if (flag == "--timeout") {
      if (auto v = value()) p.seconds(flag, *v, &cfg.timeout_s);
    } else if (flag == "--rendezvous-timeout") {
      if (auto v = value()) p.seconds(flag, *v, &cfg.rendezvous_timeout_s);
    } else if (flag == "--output") {
      if (auto v = value()) cfg.output_path = *v;
    } else if (flag == "--termination-log") {
      if (auto v = value()) cfg.termination_log = *v;
    } else if (flag == "--note") {
      if (auto v = value()) cfg.note = *v;
    } else if (flag == "--quiet") {
      no_value();
      cfg.quiet = true;
    } else {
      p.fail("unknown flag \"" + args[i] + "\" (see --help)");
    }
  }

  if (p.error.empty()) {
    if (cfg.local_ranks > 0) {
      cfg.world_size = cfg.local_ranks;
      cfg.local_world_size = cfg.local_ranks;
    } else if (cfg.rank >= cfg.world_size) {
      p.fail(std::string(rank_set ? "--rank" : "RANK") + ": must be < world size " +
             std::to_string(cfg.world_size) + ", got " + std::to_string(cfg.rank));
    }
    if (cfg.master_addr.empty()) p.fail("--master-addr (MASTER_ADDR): must not be empty");
    if (cfg.max_bytes < cfg.min_bytes) p.fail("--max-bytes: must be >= --min-bytes");
    if (!cfg.torchscript.empty() && cfg.input_shape.empty()) {
      p.fail("--input-shape: required with --torchscript (e.g. --input-shape 32,3,224,224)");
    }
    if (cfg.torchscript.empty() && !cfg.input_shape.empty()) {
      p.fail("--input-shape: only meaningful with --torchscript");
    }
    if (cfg.also_models.size() + 1 > static_cast<size_t>(kMaxModelsPerProbe)) {
      p.fail("--also-model: at most " + std::to_string(kMaxModelsPerProbe - 1) +
             " (one probe times at most " + std::to_string(kMaxModelsPerProbe) + " models)");
    }
    for (size_t i = 0; i < cfg.also_models.size(); ++i) {
      const SyntheticModel& m = cfg.also_models[i];
      auto same = [&](const SyntheticModel& o) {
        return o.parameters == m.parameters && o.batch_size == m.batch_size &&
               o.optimizer == m.optimizer && o.gradient_dtype == m.gradient_dtype;
      };
      const bool as_first = cfg.torchscript.empty() && same({cfg.parameters, cfg.batch_size,
                                                             cfg.optimizer, cfg.gradient_dtype});
      if (as_first || std::any_of(cfg.also_models.begin(), cfg.also_models.begin() + i, same))
        p.fail("--also-model: the model " + std::to_string(i + 1) +
               " is timed already (the same params, batch, optimizer and dtype)");
    }
    if (cfg.skip_compute && !cfg.also_models.empty()) {
      p.fail("--also-model: not with --no-compute (it times a model)");
    }
    if (cfg.first_bucket_bytes > cfg.bucket_cap_bytes) {
      p.fail("--first-bucket: must be <= --bucket-cap");
    }
    if (cfg.rendezvous_timeout_s > cfg.timeout_s) {
      p.fail("--rendezvous-timeout: must be <= --timeout");
    }
  }
  if (!p.error.empty()) {
    outcome.error = p.error;
    return outcome;
  }
  if (!cfg.input_shape.empty()) cfg.batch_size = static_cast<int>(cfg.input_shape[0]);
  outcome.config = std::move(cfg);
  return outcome;
}

}  // namespace commgate::probe
