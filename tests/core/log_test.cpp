// The libraries' logging interface: the text line and the JSON object a record becomes,
// context fields, levels, and a sink that throws.
#include "core/log.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace commgate {
namespace COMMGATE_TEST_UNIT {

TimePoint at_ms(int64_t ms) {
  return TimePoint(std::chrono::milliseconds(ms));
}

TEST(Log, TextLinesQuoteOnlyWhatWouldNotSplitCleanly) {
  struct Case {
    const char* name;
    LogFields fields;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"no fields", {}, "commgate webhook: info: loaded"},
      {"a plain word", {{"name", "strict"}}, "commgate webhook: info: loaded name=strict"},
      {"numbers and booleans as they are",
       {{"policies", 3}, {"share", 0.25}, {"ready", true}},
       "commgate webhook: info: loaded policies=3 share=0.25 ready=true"},
      {"a space, an equals sign or a quote is quoted and escaped",
       {{"path", "a b"}, {"selector", "team=nlp"}, {"why", "say \"no\""}},
       "commgate webhook: info: loaded path=\"a b\" selector=\"team=nlp\" why=\"say \\\"no\\\"\""},
      {"an empty value is visible", {{"names", ""}}, "commgate webhook: info: loaded names=\"\""},
      {"a newline in a value stays on the line",
       {{"e", "a\nb"}},
       "commgate webhook: info: loaded e=\"a\\nb\""},
  };
  for (const Case& c : cases) {
    const LogRecord record{LogLevel::kInfo, "loaded", c.fields};
    EXPECT_EQ(format_log_text(record, "commgate webhook"), c.want) << c.name;
  }
}

TEST(Log, JsonObjectsKeepTypesAndOrderAndNeverLoseTheirOwnKeys) {
  const LogFields fields = {{"policies", 2}, {"names", "a,b"}, {"ok", false}, {"msg", "x"}};
  const LogRecord record{LogLevel::kWarning, "reloaded \"x\"", fields};
  EXPECT_EQ(format_log_json(record, at_ms(1'764'625'200'123)),
            R"({"time":"2025-12-01T21:40:00.123Z","level":"warning","msg":"reloaded \"x\"",)"
            R"("policies":2,"names":"a,b","ok":false,"field.msg":"x"})");
}

TEST(Log, JsonReplacesInvalidUtf8InsteadOfThrowing) {
  const LogFields fields = {{"file", std::string("bad\xff.yaml")}};
  const LogRecord record{LogLevel::kError, "cannot read", fields};
  const auto parsed = nlohmann::json::parse(format_log_json(record, at_ms(0)));
  EXPECT_EQ(parsed["file"], "bad\xEF\xBF\xBD.yaml");
}

TEST(Log, ContextFieldsComeFirstOnEveryRecordOfTheDerivedLogger) {
  std::ostringstream out;
  const Logger root(text_log_sink(out, "commgate"));
  const Logger watch = root.with({{"component", "watch"}}).with({{"collection", "/api/v1/pods"}});
  watch.warning("list failed", {{"status", 500}});
  root.info("plain");
  EXPECT_EQ(out.str(),
            "commgate: warning: list failed component=watch collection=/api/v1/pods status=500\n"
            "commgate: info: plain\n");
}

TEST(Log, RecordsBelowTheLevelAreDroppedAndDiscardDropsAll) {
  std::ostringstream out;
  const Logger log(text_log_sink(out, "c"), LogLevel::kWarning);
  log.debug("d");
  log.info("i");
  log.error("e");
  EXPECT_EQ(out.str(), "c: error: e\n");
  EXPECT_FALSE(Logger::discard().enabled(LogLevel::kError));
  Logger::discard().error("nowhere");  // no sink: nothing happens
}

TEST(Log, ASinkThatThrowsDoesNotThrowIntoTheCaller) {
  const Logger log([](const LogRecord&) { throw std::runtime_error("disk full"); });
  EXPECT_NO_THROW(log.error("x"));
}

TEST(Log, JsonSinkWritesOneObjectPerLineWithTheGivenClock) {
  std::ostringstream out;
  const Logger log(json_log_sink(out, [] { return at_ms(0); }));
  log.info("a");
  log.error("b", {{"n", 1}});
  EXPECT_EQ(out.str(),
            "{\"time\":\"1970-01-01T00:00:00.000Z\",\"level\":\"info\",\"msg\":\"a\"}\n"
            "{\"time\":\"1970-01-01T00:00:00.000Z\",\"level\":\"error\",\"msg\":\"b\",\"n\":1}\n");
}

TEST(Log, LevelsReadBackFromTheirNames) {
  for (const LogLevel level :
       {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning, LogLevel::kError})
    EXPECT_EQ(parse_log_level(to_string(level)), level);
  EXPECT_EQ(parse_log_level("verbose"), std::nullopt);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
