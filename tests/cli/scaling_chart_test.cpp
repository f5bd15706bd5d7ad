// The scaling chart (cli/scaling_chart.h): the SVG read back by a real XML parser, what
// a reader looks for in it (the admitted count, the policy's line, the counts over it), the
// escaping of names, and `commgate evaluate --plot` / `-o json`'s `scaling` through the
// real binary. explain --plot: tests/cli/kubectl_plugin_test.cpp and, through the real
// kubectl, tests/sim/webhook_e2e_test.cpp (KubectlPluginE2eTest).
#include "cli/scaling_chart.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <regex>
#include <string>
#include <vector>

#include "cli/evaluate_command.h"
#include "tests/cli/cli_test_support.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::CliRun;
using testing::example;
using testing::ParsedSvg;
using testing::run;
using testing::TempFile;

// A folder of this test's own for the charts it writes, removed at the end.
class ChartDir {
 public:
  ChartDir() {
    static int n = 0;
    path_ = fs::temp_directory_path() /
            ("cg-chart-" + std::to_string(getpid()) + "-" + std::to_string(n++));
    fs::create_directories(path_);
  }
  ~ChartDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

ParsedSvg parsed(const std::string& svg) {
  TempFile f(svg, ".svg");
  return testing::parse_svg_file(f.path());
}

// A chart like bert-large's: compute 4942 ms, the exposed communication growing with the
// count, every count from 1 to `top` (or the ones listed).
ScalingChart a_chart(std::vector<int> counts = {1, 2, 3, 4, 5, 6, 7, 8}) {
  ScalingChart c;
  c.job = "nlp/bert-large";
  c.pool = "pool-1fe15c4a8473beea";
  c.node_selector = "{commgate.io/pool=cpu-1gbe}";
  c.link = "all-reduce busbw 0.121 GB/s (gloo over socket, 2 nodes probed), latency 20 us";
  c.link_short = "0.121 GB/s all-reduce busbw";
  c.policy = "the built-in default policy";
  c.max_comm_share = 0.3;
  c.max_extrapolation = 4;
  c.action = "Downsize";
  c.reason = "OverPolicyDownsized";
  c.requested_nodes = 4;
  c.admitted_nodes = 1;
  c.nodes_probed = 2;
  for (int n : counts) {
    ScalingPoint p;
    p.nodes = n;
    p.compute_ms = 4942;
    p.exposed_comm_ms = n == 1 ? 0 : 11341.0 * (n - 1) / n * 2;
    p.step_ms = p.compute_ms + p.exposed_comm_ms;
    p.comm_share = p.exposed_comm_ms / p.step_ms;
    p.speedup = n * p.compute_ms / p.step_ms;
    p.efficiency = p.speedup / n;
    p.within_policy = p.comm_share <= 0.3;
    p.measured = n == 2;
    c.points.push_back(p);
  }
  c.notes = {"Counts 1 to 8."};
  return c;
}

struct ChartCase {
  std::string name;
  ScalingChart chart;
  int want_admitted_marker = 0;  // data-nodes of id="admitted-marker"
  int want_requested_marker = 0;
  std::string want_policy_limit;  // data-max-comm-share; "" for no such element
  std::vector<int> want_over;     // counts drawn over the policy (data-within-policy false)
  int want_beyond_from = 0;       // data-from-nodes of id="beyond-extrapolation"; 0: none
  int want_axis_breaks = 0;
  bool want_min_efficiency = false;
};

void PrintTo(const ChartCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<ChartCase> chart_cases() {
  std::vector<ChartCase> cases;
  cases.push_back({"downsized_marks_the_admitted_and_requested_counts_and_the_limit",
                   a_chart(),
                   1,
                   4,
                   "0.3",
                   {2, 3, 4, 5, 6, 7, 8}});

  ScalingChart denied = a_chart();
  denied.action = "Deny";
  denied.reason = "OverPolicyDenied";
  denied.admitted_nodes = 0;
  cases.push_back({"denied_admits_no_count", denied, 0, 4, "0.3", {2, 3, 4, 5, 6, 7, 8}});

  ScalingChart unknown = a_chart();
  unknown.max_comm_share.reset();
  for (auto& p : unknown.points) p.within_policy.reset();
  cases.push_back({"an_unknown_policy_draws_no_limit_and_no_count_over_it", unknown, 1, 4, "", {}});

  ScalingChart far = a_chart({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  far.requested_nodes = 12;
  far.action = "Gate";
  far.reason = "ExtrapolationTooFar";
  far.admitted_nodes = 12;
  for (auto& p : far.points) p.beyond_max_extrapolation = p.nodes > 8;
  cases.push_back({"counts_past_max_extrapolation_are_shaded_and_a_gate_admits_none",
                   far,
                   0,
                   12,
                   "0.3",
                   {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
                   9});

  ScalingChart sparse = a_chart({1, 2, 3, 4, 16, 32, 600});
  sparse.requested_nodes = 600;
  sparse.admitted_nodes = 1;
  // Counts left out: a log2 axis (no breaks), tests below check its distances.
  cases.push_back({"counts_left_out_are_drawn_on_a_log2_axis",
                   sparse,
                   1,
                   600,
                   "0.3",
                   {2, 3, 4, 16, 32, 600},
                   0,
                   0});

  ScalingChart efficiency = a_chart();
  efficiency.min_scaling_efficiency = 0.5;
  cases.push_back({"a_minimum_efficiency_is_a_line_on_the_speedup_panel",
                   efficiency,
                   1,
                   4,
                   "0.3",
                   {2, 3, 4, 5, 6, 7, 8},
                   0,
                   0,
                   true});

  ScalingChart within = a_chart();
  within.action = "Admit";
  within.reason = "WithinPolicy";
  within.max_comm_share = 0.9;
  within.admitted_nodes = 4;
  for (auto& p : within.points) p.within_policy = p.comm_share <= 0.9;
  cases.push_back({"admitted_as_requested_marks_both_at_one_count", within, 4, 4, "0.9", {}});
  return cases;
}

class ScalingChartSvg : public ::testing::TestWithParam<ChartCase> {};

TEST_P(ScalingChartSvg, parses_back_as_xml_with_the_markers_a_reader_looks_for) {
  const ChartCase& tc = GetParam();
  const std::string svg = scaling_chart_svg(tc.chart);
  const ParsedSvg r = parsed(svg);
  ASSERT_TRUE(r.ok) << r.error << "\n" << svg;
  const json& ids = r.doc["ids"];
  EXPECT_EQ(r.doc["root"], "svg");

  ASSERT_TRUE(ids.contains("admitted-marker")) << svg;
  EXPECT_EQ(ids["admitted-marker"]["data-nodes"], std::to_string(tc.want_admitted_marker));
  ASSERT_TRUE(ids.contains("requested-marker")) << svg;
  EXPECT_EQ(ids["requested-marker"]["data-nodes"], std::to_string(tc.want_requested_marker));
  EXPECT_EQ(ids["probe-marker"]["data-nodes"], "2");
  if (tc.want_policy_limit.empty()) {
    EXPECT_FALSE(ids.contains("policy-limit")) << svg;
  } else {
    ASSERT_TRUE(ids.contains("policy-limit")) << svg;
    EXPECT_EQ(ids["policy-limit"]["data-max-comm-share"], tc.want_policy_limit);
  }

  std::vector<int> drawn, over;
  for (const json& bar : r.doc["bars"]) {
    drawn.push_back(std::stoi(bar["data-nodes"].get<std::string>()));
    if (bar["data-within-policy"] == "false") over.push_back(drawn.back());
    if (!tc.chart.max_comm_share) {
      EXPECT_EQ(bar["data-within-policy"], "unknown");
    }
  }
  std::vector<int> want_drawn;
  for (const auto& p : tc.chart.points) want_drawn.push_back(p.nodes);
  EXPECT_EQ(drawn, want_drawn);
  EXPECT_EQ(over, tc.want_over);

  if (tc.want_beyond_from > 0) {
    ASSERT_TRUE(ids.contains("beyond-extrapolation")) << svg;
    EXPECT_EQ(ids["beyond-extrapolation"]["data-from-nodes"], std::to_string(tc.want_beyond_from));
  } else {
    EXPECT_FALSE(ids.contains("beyond-extrapolation"));
  }
  EXPECT_EQ(r.doc["classes"].value("axis-break", 0), 2 * tc.want_axis_breaks)  // one per axis
      << svg;
  EXPECT_EQ(ids.contains("policy-min-efficiency"), tc.want_min_efficiency);
  for (const char* id : {"chart-title", "speedup-line", "ideal-line", "legend"})
    EXPECT_TRUE(ids.contains(id)) << id;
  const std::string title = r.doc["texts"][0];  // the document's <title>
  for (const std::string& want : {tc.chart.job, tc.chart.pool, tc.chart.link_short})
    EXPECT_NE(title.find(want), std::string::npos) << want << " in " << title;
}

INSTANTIATE_TEST_SUITE_P(Cases, ScalingChartSvg, ::testing::ValuesIn(chart_cases()),
                         [](const ::testing::TestParamInfo<ChartCase>& p) { return p.param.name; });

// Each bar's compute rectangle: nodes -> {x, y, width, height}.
std::map<int, std::array<double, 4>> compute_rects(const std::string& svg) {
  static const std::regex kBar(
      R"re(<g class="bar" data-nodes="(\d+)"[^>]*>.*?<rect class="compute" x="([-\d.]+)" )re"
      R"re(y="([-\d.]+)" width="([-\d.]+)" height="([-\d.]+)")re");
  std::map<int, std::array<double, 4>> out;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), kBar); it != std::sregex_iterator();
       ++it)
    out[std::stoi((*it)[1])] = {std::stod((*it)[2]), std::stod((*it)[3]), std::stod((*it)[4]),
                                std::stod((*it)[5])};
  return out;
}

// Issue #24 item 12 (the trial of 2026-12-06): 1-16 then powers of two in equal slots
// bent the curve super-linear past 16. On a log2 axis each doubling is the same distance.
TEST(ScalingChart, counts_left_out_are_placed_on_a_log2_axis) {
  const std::string svg = scaling_chart_svg(a_chart({1, 2, 3, 4, 8, 16, 32, 64, 600}));
  const auto rects = compute_rects(svg);
  ASSERT_EQ(rects.size(), 9u) << svg;
  auto centre = [&](int n) { return rects.at(n)[0] + rects.at(n)[2] / 2; };
  const double octave = centre(2) - centre(1);
  EXPECT_GT(octave, 20);
  for (const auto& [a, b] : std::vector<std::pair<int, int>>{{2, 4}, {4, 8}, {16, 32}, {32, 64}})
    EXPECT_NEAR(centre(b) - centre(a), octave, 0.2) << a << " to " << b;
  EXPECT_NEAR(centre(600) - centre(64), octave * std::log2(600.0 / 64), 0.2);
  EXPECT_NE(svg.find("log2 scale"), std::string::npos);
  // Every count drawn: the linear axis, slots of one width.
  const auto linear = compute_rects(scaling_chart_svg(a_chart()));
  EXPECT_NEAR(linear.at(8)[0] - linear.at(7)[0], linear.at(2)[0] - linear.at(1)[0], 0.2);
}

// Issue #24 item 12: the pool's size was not drawn. A line after its count; none when
// every count drawn fits.
TEST(ScalingChart, the_pools_size_is_a_line_after_its_count) {
  ScalingChart c = a_chart();
  c.pool_nodes = 5;
  const std::string svg = scaling_chart_svg(c);
  const ParsedSvg r = parsed(svg);
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_TRUE(r.doc["ids"].contains("pool-size")) << svg;
  EXPECT_EQ(r.doc["ids"]["pool-size"]["data-nodes"], "5");
  static const std::regex kLine(R"re(<g id="pool-size" data-nodes="5"><line x1="([\d.]+)")re");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, kLine)) << svg;
  const auto rects = compute_rects(svg);
  EXPECT_GT(std::stod(m[1]), rects.at(5)[0] + rects.at(5)[2]);
  EXPECT_LT(std::stod(m[1]), rects.at(6)[0]);
  EXPECT_NE(svg.find("pool: 5 nodes"), std::string::npos);
  c.pool_nodes = 8;
  EXPECT_EQ(scaling_chart_svg(c).find("pool-size"), std::string::npos);
  c.pool_nodes = 0;
  EXPECT_EQ(scaling_chart_svg(c).find("pool-size"), std::string::npos);
}

// Issue #24 item 12: where communication dwarfs compute, compute was invisible.
// Past maxExtrapolation the policy judges nothing: those bars are grey ("not judged"), never
// red or "within policy", whatever the point's within_policy says (#24 item 6).
TEST(ScalingChart, counts_past_max_extrapolation_are_drawn_not_judged) {
  ScalingChart c = a_chart({1, 2, 4, 8, 16});
  for (auto& p : c.points) {
    p.beyond_max_extrapolation = p.nodes > 4;
    p.within_policy = p.nodes > 4 ? std::optional<bool>(false) : std::optional<bool>(true);
  }
  const std::string svg = scaling_chart_svg(c);
  EXPECT_NE(svg.find("exposed communication, not judged<"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("#e15759"), std::string::npos) << "no count drawn over policy:\n" << svg;
  EXPECT_EQ(svg.find("exposed communication, over policy"), std::string::npos) << svg;
  EXPECT_NE(svg.find("#bab0ac"), std::string::npos) << svg;
}

TEST(ScalingChart, compute_stays_visible_when_communication_dominates) {
  ScalingChart c = a_chart();
  for (auto& p : c.points) {
    p.compute_ms = 10;
    p.step_ms = p.compute_ms + p.exposed_comm_ms;
  }
  const std::string svg = scaling_chart_svg(c);
  ASSERT_TRUE(parsed(svg).ok);
  for (const auto& [nodes, rect] : compute_rects(svg)) EXPECT_GE(rect[3], 4.0) << nodes;
  EXPECT_NE(svg.find("Compute (blue, 10.0 ms per step at the least) is too thin to see"),
            std::string::npos)
      << svg;
  EXPECT_EQ(scaling_chart_svg(a_chart()).find("too thin to see"), std::string::npos);
}

TEST(ScalingChart, names_with_markup_are_escaped_and_read_back_as_written) {
  ScalingChart c = a_chart();
  c.job = "ns/a<b&\"c'>";
  c.pool = "pool-<&>";
  c.node_selector = "{team=\"x\"&<y>}";
  c.policy = "CommPolicy p\"&<";
  c.reason = "R<&>";
  // A control character and a byte that is not UTF-8 would make the document ill-formed.
  c.notes = {std::string("note \x01 with \xff bytes & <tags>")};
  const std::string svg = scaling_chart_svg(c);
  EXPECT_EQ(svg.find("a<b"), std::string::npos) << "unescaped name";
  EXPECT_EQ(svg.find("pool-<"), std::string::npos);
  const ParsedSvg r = parsed(svg);
  ASSERT_TRUE(r.ok) << r.error << "\n" << svg;
  std::string all;
  for (const json& t : r.doc["texts"]) all += t.get<std::string>() + "\n";
  for (const std::string& want :
       {std::string("ns/a<b&\"c'>"), std::string("pool-<&>"), std::string("{team=\"x\"&<y>}"),
        std::string("p\"&<"), std::string("R<&>"), std::string("bytes & <tags>")})
    EXPECT_NE(all.find(want), std::string::npos) << want << " in\n" << all;
  EXPECT_NE(all.find("note \xEF\xBF\xBD with \xEF\xBF\xBD bytes"), std::string::npos) << all;
}

TEST(ScalingChart, xml_escaped_leaves_valid_text_and_replaces_what_xml_cannot_hold) {
  struct Case {
    std::string in, want;
  };
  for (const Case& c : std::vector<Case>{
           {"plain", "plain"},
           {"<&>\"'", "&lt;&amp;&gt;&quot;&apos;"},
           {"tab\tand\nnewline", "tab\tand\nnewline"},
           {"nul\x01", "nul\xEF\xBF\xBD"},
           {"\xC3\xA9t\xC3\xA9 \xE2\x86\x92 \xF0\x9F\x9A\x80",
            "\xC3\xA9t\xC3\xA9 \xE2\x86\x92 \xF0\x9F\x9A\x80"},
           {"cut \xE2\x86", "cut \xEF\xBF\xBD\xEF\xBF\xBD"},
           {"overlong \xC0\xAF", "overlong \xEF\xBF\xBD\xEF\xBF\xBD"},
           {"surrogate \xED\xA0\x80", "surrogate \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
       })
    EXPECT_EQ(xml_escaped(c.in), c.want) << c.in;
}

TEST(ScalingChart, without_points_it_still_parses_and_says_why) {
  ScalingChart c = a_chart({});
  c.action = "Gate";
  c.reason = "MeasurementMissing";
  c.notes = {"No prediction to draw: no measurement of the link between these nodes yet"};
  const ParsedSvg r = parsed(scaling_chart_svg(c));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(r.doc["bars"].empty());
  std::string all;
  for (const json& t : r.doc["texts"]) all += t.get<std::string>() + "\n";
  EXPECT_NE(all.find("no measurement of the link"), std::string::npos) << all;
}

// The real binary, with the example job and the recorded 1 GbE probe that docs/cli.md shows.
const std::vector<std::string> kBertArgs = {
    "evaluate", "-f", example("jobs/bert-large-350m.yaml"), "--measurement",
    example("measurements/probe-netns-2-nodes-1gbit-350M-params.json")};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(EvaluatePlot, writes_a_chart_with_the_decisions_counts_and_json_has_the_same_rows) {
  ChartDir dir;
  const std::string file = dir.file("bert.svg");
  const CliRun r = run(with(kBertArgs, {"--plot", file, "-o", "json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("wrote the scaling chart of nlp/bert-large (nodes 1-8) to " + file),
            std::string::npos)
      << r.err;
  const json report = json::parse(r.out);
  const json& decision = report["decision"];
  ASSERT_EQ(decision["admittedNodes"], 1) << decision.dump(2);

  // -o json's scaling: every count 1 to max(8, 2 x 4), each as decide()'s model has it.
  const json& scaling = report["scaling"];
  ASSERT_EQ(scaling.size(), 8u) << report.dump(2);
  for (size_t i = 0; i < scaling.size(); ++i) {
    const json& s = scaling[i];
    EXPECT_EQ(s["nodes"], static_cast<int>(i) + 1);
    for (const char* key : {"computeMs", "exposedCommMs", "stepMs", "commShare", "speedup",
                            "efficiency", "withinPolicy", "measured", "beyondMaxExtrapolation"})
      EXPECT_TRUE(s.contains(key)) << key << " in " << s.dump();
    EXPECT_EQ(s["withinPolicy"], s["commShare"].get<double>() <= 0.3) << s.dump();
    EXPECT_EQ(s["beyondMaxExtrapolation"], s["nodes"].get<int>() > 8) << s.dump();
  }
  // At the counts the decision shows, the very rows it decided on.
  for (const json& p : decision["predictions"]) {
    const json& s = scaling[p["nodes"].get<int>() - 1];
    EXPECT_EQ(s["stepMs"], p["stepTimeMs"]) << s.dump() << "\n" << p.dump();
    EXPECT_EQ(s["exposedCommMs"], p["exposedCommMs"]);
    EXPECT_EQ(s["commShare"], p["commShare"]);
    EXPECT_EQ(s["speedup"], p["speedup"]);
    EXPECT_EQ(s["efficiency"], p["scalingEfficiency"]);
    EXPECT_EQ(s["measured"], p["measured"]);
  }
  EXPECT_EQ(scaling[1]["measured"], true) << "the probe's own step at 2 nodes";

  const ParsedSvg svg = testing::parse_svg_file(file);
  ASSERT_TRUE(svg.ok) << svg.error;
  EXPECT_EQ(svg.doc["ids"]["admitted-marker"]["data-nodes"], "1");
  EXPECT_EQ(svg.doc["ids"]["requested-marker"]["data-nodes"], "4");
  EXPECT_EQ(svg.doc["ids"]["probe-marker"]["data-nodes"], "2");
  EXPECT_EQ(svg.doc["ids"]["probe-marker"]["data-measured"], "true");
  EXPECT_EQ(svg.doc["ids"]["policy-limit"]["data-max-comm-share"], "0.3");
  ASSERT_EQ(svg.doc["bars"].size(), scaling.size());
  for (size_t i = 0; i < scaling.size(); ++i)
    EXPECT_EQ(svg.doc["bars"][i]["data-within-policy"],
              scaling[i]["withinPolicy"].get<bool>() ? "true" : "false");
  const std::string title = svg.doc["texts"][0];
  for (const char* want : {"nlp/bert-large", "pool-1fe15c4a8473beea", "0.121 GB/s"})
    EXPECT_NE(title.find(want), std::string::npos) << want << " in " << title;

  // The table form writes the same file and keeps its stdout as it was.
  const CliRun table = run(with(kBertArgs, {"--plot", dir.file("again.svg")}));
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(testing::slurp(dir.file("again.svg")), testing::slurp(file));
  EXPECT_EQ(table.out, run(kBertArgs).out);
  EXPECT_EQ(std::vector<fs::path>(fs::directory_iterator(dir.path()), {}).size(), 2u)
      << "no temporary file left beside the charts";
}

TEST(EvaluatePlot, a_job_no_measurement_decides_gets_no_file_and_is_told_why) {
  ChartDir dir;
  const std::string file = dir.file("none.svg");
  // The 25M-parameter probe did not time bert-large's model: a Gate
  // (ComputeMeasurementMissing), exit 4.
  const CliRun r =
      run({"evaluate", "-f", example("jobs/bert-large-350m.yaml"), "--measurement",
           example("measurements/probe-netns-2-nodes-1gbit-25M-params.json"), "--plot", file});
  EXPECT_EQ(r.exit_code, kExitGated) << r.err << r.out;
  EXPECT_FALSE(fs::exists(file));
  EXPECT_NE(r.err.find("--plot: no chart written to " + file +
                       ": nlp/bert-large has no "
                       "predictions to draw (Gate, ComputeMeasurementMissing)"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(r.out.empty()) << "the table is printed as without --plot";
  const CliRun j =
      run({"evaluate", "-f", example("jobs/bert-large-350m.yaml"), "--measurement",
           example("measurements/probe-netns-2-nodes-1gbit-25M-params.json"), "-o", "json"});
  EXPECT_FALSE(json::parse(j.out).contains("scaling")) << j.out;
}

TEST(EvaluatePlot, a_file_that_cannot_be_written_is_a_usage_error_naming_it) {
  ChartDir dir;
  const std::string existing = dir.file("keep.svg");
  std::ofstream(existing) << "old";
  struct Case {
    std::string name, path, want_err;
  };
  for (const Case& c : std::vector<Case>{
           {"no_such_folder", dir.file("missing/chart.svg"),
            "--plot: cannot write " + dir.file("missing/chart.svg") +
                ": No such file or directory"},
           {"a_directory", dir.path().string(),
            "--plot: cannot write " + dir.path().string() + ": it is a directory"},
           {"an_empty_name", "", "--plot needs a file name"},
       }) {
    const CliRun r = run(with(kBertArgs, {"--plot=" + c.path}));
    EXPECT_EQ(r.exit_code, kExitBadInput) << c.name << "\n" << r.err;
    EXPECT_NE(r.err.find(c.want_err), std::string::npos) << c.name << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << c.name << ": stdout stays empty on exit 2\n" << r.out;
  }
  if (geteuid() != 0) {  // root writes anywhere
    fs::create_directories(dir.path() / "ro");
    fs::permissions(dir.path() / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    const CliRun r = run(with(kBertArgs, {"--plot", dir.file("ro/chart.svg")}));
    EXPECT_EQ(r.exit_code, kExitBadInput) << r.err;
    EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
    fs::permissions(dir.path() / "ro", fs::perms::owner_all);
  }
  EXPECT_EQ(testing::slurp(existing), "old");
  // Two jobs, one file: refused before anything is evaluated.
  const std::string two = testing::slurp(example("jobs/bert-large-350m.yaml")) + "\n---\n" +
                          testing::slurp(example("jobs/resnet50-5m.yaml"));
  TempFile jobs(two, ".yaml");
  const CliRun r = run({"evaluate", "-f", jobs.path(), "--measurement",
                        example("measurements/probe-netns-2-nodes-1gbit-350M-params.json"),
                        "--plot", dir.file("two.svg")});
  EXPECT_EQ(r.exit_code, kExitBadInput) << r.err;
  EXPECT_NE(r.err.find("--plot draws one TrainingJob's chart, and -f gave 2"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir.file("two.svg")));
}

// docs/researcher.md shows docs/images/scaling-example.svg as what `commgate evaluate
// --plot` draws for the example job: it must still be that.
TEST(EvaluatePlot, the_chart_in_the_docs_is_what_the_binary_draws) {
  ChartDir dir;
  const std::string file = dir.file("docs.svg");
  const CliRun r = testing::run_commgate_in(
      COMMGATE_SOURCE_DIR,
      {"evaluate", "-f", "examples/jobs/bert-large-350m.yaml", "--measurement",
       "examples/measurements/probe-netns-2-nodes-1gbit-350M-params.json", "--plot", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(testing::slurp(file),
            testing::slurp(std::string(COMMGATE_SOURCE_DIR) + "/docs/images/scaling-example.svg"))
      << "docs/images/scaling-example.svg is out of date; from the repository root, run\n"
         "  build/bin/commgate evaluate -f examples/jobs/bert-large-350m.yaml --measurement "
         "examples/measurements/probe-netns-2-nodes-1gbit-350M-params.json --plot "
         "docs/images/scaling-example.svg";
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
