// core/metrics.h (the registry), and the HTTPS server's stats appended to it as a collector.
#include "core/metrics.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "server/server.h"

namespace commgate::server {
namespace COMMGATE_TEST_UNIT {

TEST(Metrics, renders_counters_gauges_and_labels_in_text_format) {
  Registry reg;
  reg.counter("requests_total", "Requests.", {{"code", "200"}}).inc(3);
  reg.counter("requests_total", "Requests.", {{"code", "500"}}).inc();
  reg.gauge("cache_age_seconds", "Age \\ of the cache.").set(1.5);
  const std::string text = reg.render();
  EXPECT_NE(text.find("# HELP requests_total Requests.\n# TYPE requests_total counter\n"),
            std::string::npos);
  EXPECT_NE(text.find("requests_total{code=\"200\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("requests_total{code=\"500\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("# HELP cache_age_seconds Age \\\\ of the cache.\n"), std::string::npos);
  EXPECT_NE(text.find("cache_age_seconds 1.5\n"), std::string::npos);
}

TEST(Metrics, histogram_buckets_are_cumulative_with_inf_sum_and_count) {
  Registry reg;
  Histogram& h = reg.histogram("latency_seconds", "Latency.", {0.1, 1}, {{"ep", "mutate"}});
  h.observe(0.05);
  h.observe(0.1);  // le is inclusive
  h.observe(0.5);
  h.observe(7);
  const std::string text = reg.render();
  EXPECT_NE(text.find("latency_seconds_bucket{ep=\"mutate\",le=\"0.1\"} 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("latency_seconds_bucket{ep=\"mutate\",le=\"1\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("latency_seconds_bucket{ep=\"mutate\",le=\"+Inf\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("latency_seconds_count{ep=\"mutate\"} 4\n"), std::string::npos);
  EXPECT_NE(text.find("latency_seconds_sum{ep=\"mutate\"} 7.65\n"), std::string::npos);
}

// As Prometheus clients print them (Go's FormatFloat 'g', -1): shortest round-trip digits,
// exponent form below 1e-4 and from 1e6; integers below 1e15 plainly.
TEST(Metrics, numbers_print_in_the_shortest_form_that_reads_back) {
  struct Case {
    double value;
    const char* want;
  };
  for (const Case& c : {Case{0.0005, "0.0005"}, Case{0.0001, "0.0001"}, Case{2.5e-05, "2.5e-05"},
                        Case{0.1, "0.1"}, Case{0.30000000000000004, "0.30000000000000004"},
                        Case{7.65, "7.65"}, Case{1234567.5, "1.2345675e+06"}, Case{1, "1"},
                        Case{1e6, "1000000"}, Case{-0.25, "-0.25"}}) {
    EXPECT_EQ(prometheus_number(c.value), c.want) << c.value;
  }
  Registry reg;
  reg.histogram("d_seconds", "D.", {0.0005, 0.001, 0.0025});
  const std::string text = reg.render();
  EXPECT_NE(text.find("d_seconds_bucket{le=\"0.0005\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("d_seconds_bucket{le=\"0.0025\"} 0\n"), std::string::npos) << text;
}

TEST(Metrics, label_values_are_escaped) {
  Registry reg;
  reg.counter("x_total", "X.", {{"msg", "a\"b\\c\nd"}}).inc();
  EXPECT_NE(reg.render().find("x_total{msg=\"a\\\"b\\\\c\\nd\"} 1\n"), std::string::npos);
}

TEST(Metrics, bad_names_and_type_clashes_are_refused) {
  Registry reg;
  EXPECT_THROW(reg.counter("1bad", "x"), std::invalid_argument);
  EXPECT_THROW(reg.counter("ok_total", "x", {{"bad-label", "v"}}), std::invalid_argument);
  reg.counter("ok_total", "x");
  EXPECT_THROW(reg.gauge("ok_total", "x"), std::invalid_argument);
}

TEST(Metrics, concurrent_updates_are_all_counted) {
  Registry reg;
  Counter& c = reg.counter("c_total", "C.");
  Histogram& h = reg.histogram("h", "H.", {1});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.inc();
        h.observe(0.5);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.value(), 40000);
  EXPECT_EQ(h.snapshot().count, 40000u);
}

TEST(Metrics, collectors_append_server_stats) {
  Registry reg;
  ServerStats s;
  s.responses_by_class[1] = 7;
  s.timeouts_header = 2;
  s.connections_active = 3;
  reg.add_collector([s] { return server_stats_prometheus(s, "commgate_webhook_http"); });
  const std::string text = reg.render();
  EXPECT_NE(text.find("commgate_webhook_http_responses_total{code=\"2xx\"} 7\n"),
            std::string::npos);
  EXPECT_NE(text.find("commgate_webhook_http_timeouts_total{phase=\"header\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE commgate_webhook_http_connections_active gauge\n"
                      "commgate_webhook_http_connections_active 3\n"),
            std::string::npos);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::server
