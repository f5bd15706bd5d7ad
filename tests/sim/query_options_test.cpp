// The query parameters read as kube-apiserver's parameter codec reads them
// (sim/query_options.h): booleans never fail and only "0"/"false" are false; integers are
// strconv.ParseInt with Go's error message in a 400 Status.
#include "sim/query_options.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "sim/api_status.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

struct BoolCase {
  std::string name;
  std::string value;
  bool want;
};

void PrintTo(const BoolCase& c, std::ostream* os) {
  *os << c.name << " (\"" << c.value << "\")";
}

class GoQueryBool : public ::testing::TestWithParam<BoolCase> {};

TEST_P(GoQueryBool, reads_like_convert_slice_string_to_bool) {
  EXPECT_EQ(go_query_bool(GetParam().value), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Values, GoQueryBool,
    ::testing::Values(
        BoolCase{"client_go_one_is_true", "1", true}, BoolCase{"lower_true_is_true", "true", true},
        BoolCase{"python_client_capital_true_is_true", "True", true},
        BoolCase{"upper_true_is_true", "TRUE", true}, BoolCase{"go_short_t_is_true", "t", true},
        BoolCase{"empty_value_is_true_as_in_go", "", true},
        BoolCase{"yes_is_true_not_an_error", "yes", true}, BoolCase{"two_is_true", "2", true},
        BoolCase{"zero_is_false", "0", false}, BoolCase{"lower_false_is_false", "false", false},
        BoolCase{"python_client_capital_false_is_false", "False", false},
        BoolCase{"upper_false_is_false", "FALSE", false},
        BoolCase{"mixed_case_false_is_false", "fAlSe", false},
        BoolCase{"go_short_f_is_true_unlike_parsebool", "f", true},
        BoolCase{"zero_zero_is_true_only_0_counts", "00", true},
        BoolCase{"false_with_space_is_true", "false ", true}),
    [](const auto& param_info) { return param_info.param.name; });

struct IntCase {
  std::string name;
  std::string text;
  std::optional<int64_t> want_value;
  std::string want_error;
};

void PrintTo(const IntCase& c, std::ostream* os) {
  *os << c.name << " (\"" << c.text << "\")";
}

class GoParseInt64 : public ::testing::TestWithParam<IntCase> {};

TEST_P(GoParseInt64, matches_strconv_parseint_base_10) {
  const GoInt64 got = go_parse_int64(GetParam().text);
  EXPECT_EQ(got.value, GetParam().want_value);
  EXPECT_EQ(got.error, GetParam().want_error);
}

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

INSTANTIATE_TEST_SUITE_P(
    Values, GoParseInt64,
    ::testing::Values(
        IntCase{"plain_digits", "500", 500, ""}, IntCase{"zero", "0", 0, ""},
        IntCase{"leading_zeros_are_decimal", "010", 10, ""}, IntCase{"plus_sign", "+7", 7, ""},
        IntCase{"minus_sign", "-1", -1, ""}, IntCase{"largest", "9223372036854775807", kMax, ""},
        IntCase{"smallest", "-9223372036854775808", kMin, ""},
        IntCase{"empty_is_invalid", "", std::nullopt,
                R"(strconv.ParseInt: parsing "": invalid syntax)"},
        IntCase{"sign_alone_is_invalid", "-", std::nullopt,
                R"(strconv.ParseInt: parsing "-": invalid syntax)"},
        IntCase{"word_is_invalid", "abc", std::nullopt,
                R"(strconv.ParseInt: parsing "abc": invalid syntax)"},
        IntCase{"decimal_point_is_invalid", "1.5", std::nullopt,
                R"(strconv.ParseInt: parsing "1.5": invalid syntax)"},
        IntCase{"hex_prefix_is_invalid_in_base_10", "0x10", std::nullopt,
                R"(strconv.ParseInt: parsing "0x10": invalid syntax)"},
        IntCase{"underscore_is_invalid_in_base_10", "1_000", std::nullopt,
                R"(strconv.ParseInt: parsing "1_000": invalid syntax)"},
        IntCase{"space_is_invalid", " 5", std::nullopt,
                R"(strconv.ParseInt: parsing " 5": invalid syntax)"},
        IntCase{"one_past_largest_is_out_of_range", "9223372036854775808", std::nullopt,
                R"(strconv.ParseInt: parsing "9223372036854775808": value out of range)"},
        IntCase{"one_past_smallest_is_out_of_range", "-9223372036854775809", std::nullopt,
                R"(strconv.ParseInt: parsing "-9223372036854775809": value out of range)"},
        IntCase{"past_uint64_is_out_of_range", "99999999999999999999", std::nullopt,
                R"(strconv.ParseInt: parsing "99999999999999999999": value out of range)"},
        IntCase{"overflow_before_a_bad_byte_reports_range", "99999999999999999999x", std::nullopt,
                R"(strconv.ParseInt: parsing "99999999999999999999x": value out of range)"},
        IntCase{"quote_in_value_is_escaped_as_go_quotes_it", "1\"", std::nullopt,
                R"(strconv.ParseInt: parsing "1\"": invalid syntax)"},
        IntCase{"control_byte_is_escaped", "1\n", std::nullopt,
                R"(strconv.ParseInt: parsing "1\n": invalid syntax)"},
        // Go's quoting, not JSON's (core/json_write.h would write \u0007, \u0001 and a raw
        // DEL): Go names \a and \v, writes other control bytes and DEL as \x.., keeps UTF-8.
        IntCase{"bell_is_escaped_by_its_go_name", "1\a", std::nullopt,
                R"(strconv.ParseInt: parsing "1\a": invalid syntax)"},
        IntCase{"other_control_byte_is_escaped_as_go_hex", "1\x01", std::nullopt,
                R"(strconv.ParseInt: parsing "1\x01": invalid syntax)"},
        IntCase{"del_is_escaped_as_go_hex", "1\x7f", std::nullopt,
                R"(strconv.ParseInt: parsing "1\x7f": invalid syntax)"},
        IntCase{"utf8_is_kept", "1\u00e9", std::nullopt,
                "strconv.ParseInt: parsing \"1\u00e9\": invalid syntax"}),
    [](const auto& param_info) { return param_info.param.name; });

server::Request request_with_query(const std::string& query) {
  server::Request r;
  r.method = "GET";
  r.path = "/apis/commgate.io/v1alpha1/trainingjobs";
  r.query = query;
  r.target = r.path + "?" + query;
  return r;
}

struct ListCase {
  std::string name;
  std::string query;
  bool want_watch;
  bool want_bookmarks;
  std::optional<bool> want_initial_events;
  std::optional<int64_t> want_timeout;
  int64_t want_limit;
};

void PrintTo(const ListCase& c, std::ostream* os) {
  *os << c.name << " (?" << c.query << ")";
}

class DecodeListQuery : public ::testing::TestWithParam<ListCase> {};

TEST_P(DecodeListQuery, reads_the_typed_list_options) {
  const ListCase& c = GetParam();
  const ListQuery q = decode_list_query(request_with_query(c.query));
  EXPECT_EQ(q.watch, c.want_watch);
  EXPECT_EQ(q.allow_watch_bookmarks, c.want_bookmarks);
  EXPECT_EQ(q.send_initial_events, c.want_initial_events);
  EXPECT_EQ(q.timeout_seconds, c.want_timeout);
  EXPECT_EQ(q.limit, c.want_limit);
}

INSTANTIATE_TEST_SUITE_P(
    Queries, DecodeListQuery,
    ::testing::Values(
        ListCase{"nothing_asked_is_a_plain_list", "", false, false, std::nullopt, std::nullopt, 0},
        ListCase{"python_client_watch", "watch=True&timeoutSeconds=5", true, false, std::nullopt, 5,
                 0},
        ListCase{"client_go_watch_with_bookmarks", "watch=1&allowWatchBookmarks=true", true, true,
                 std::nullopt, std::nullopt, 0},
        ListCase{"bare_watch_key_watches", "watch", true, false, std::nullopt, std::nullopt, 0},
        ListCase{"watch_false_lists", "watch=false&limit=2", false, false, std::nullopt,
                 std::nullopt, 2},
        ListCase{"first_of_repeated_values_counts", "watch=0&watch=1", false, false, std::nullopt,
                 std::nullopt, 0},
        ListCase{"percent_encoded_value", "watch=%54rue", true, false, std::nullopt, std::nullopt,
                 0},
        ListCase{"initial_events_false_is_present", "watch=1&sendInitialEvents=False", true, false,
                 false, std::nullopt, 0},
        ListCase{"negative_limit_is_kept_and_means_none", "limit=-3", false, false, std::nullopt,
                 std::nullopt, -3}),
    [](const auto& param_info) { return param_info.param.name; });

struct BadCase {
  std::string name;
  std::string query;
  std::string want_message;
};

void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.name << " (?" << c.query << ")";
}

class BadIntegerQuery : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadIntegerQuery, is_a_400_status_with_gos_message) {
  const BadCase& c = GetParam();
  const server::Request r = request_with_query(c.query);
  try {
    decode_list_query(r);
    decode_delete_query(r);
    FAIL() << "no error for ?" << c.query;
  } catch (const ApiError& e) {
    // The body kube-apiserver writes for errors.NewBadRequest(err.Error()).
    const nlohmann::json want = {
        {"kind", "Status"},    {"apiVersion", "v1"},        {"metadata", nlohmann::json::object()},
        {"status", "Failure"}, {"message", c.want_message}, {"reason", "BadRequest"},
        {"code", 400}};
    EXPECT_EQ(e.status(), want) << e.status().dump();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Queries, BadIntegerQuery,
    ::testing::Values(
        BadCase{"limit_word", "limit=ten", R"(strconv.ParseInt: parsing "ten": invalid syntax)"},
        BadCase{"limit_empty", "limit=", R"(strconv.ParseInt: parsing "": invalid syntax)"},
        BadCase{"timeout_fraction", "watch=1&timeoutSeconds=1.5",
                R"(strconv.ParseInt: parsing "1.5": invalid syntax)"},
        BadCase{"timeout_reported_before_limit", "limit=x&timeoutSeconds=y",
                R"(strconv.ParseInt: parsing "y": invalid syntax)"},
        BadCase{"grace_period_out_of_range", "gracePeriodSeconds=9223372036854775808",
                R"(strconv.ParseInt: parsing "9223372036854775808": value out of range)"}),
    [](const auto& param_info) { return param_info.param.name; });

TEST(DecodeDeleteQuery, reads_grace_period_and_orphan_dependents) {
  const DeleteQuery q = decode_delete_query(
      request_with_query("gracePeriodSeconds=0&orphanDependents=False&limit=bad"));
  EXPECT_EQ(q.grace_period_seconds, 0);
  EXPECT_EQ(q.orphan_dependents, false);
  EXPECT_EQ(decode_delete_query(request_with_query("")).orphan_dependents, std::nullopt);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
