#include "sim/cel_rules.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace commgate::sim {
namespace {

using json = nlohmann::json;

// A rule the subset cannot read. `syntax`: not CEL at all (kube-apiserver would refuse the
// CRD); otherwise valid CEL that the subset does not model (a macro, oldSelf, a function).
struct Unsupported : std::runtime_error {
  explicit Unsupported(const std::string& what, bool syntax_error = false)
      : std::runtime_error(what), syntax(syntax_error) {}
  bool syntax;
};

// A CEL value, or the error its evaluation produced (CEL errors are values: `||` and `&&`
// may absorb them).
struct Value {
  json v;
  std::string error;
  bool failed() const { return !error.empty(); }
};

Value fail(std::string why) {
  return {nullptr, std::move(why)};
}

std::string type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null_type";
    case json::value_t::boolean:
      return "bool";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "int";
    case json::value_t::number_float:
      return "double";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "list";
    case json::value_t::object:
      return "map";
    default:
      return "unknown";
  }
}

Value no_overload(const std::string& op, const Value& a) {
  return fail("no such overload: " + op + "(" + type_name(a.v) + ")");
}
Value no_overload(const std::string& op, const Value& a, const Value& b) {
  return fail("no such overload: " + type_name(a.v) + " " + op + " " + type_name(b.v));
}

bool is_int(const json& v) {
  return v.is_number_integer();
}
int64_t as_int(const json& v) {
  return v.is_number_unsigned() ? static_cast<int64_t>(v.get<uint64_t>()) : v.get<int64_t>();
}
double as_double(const json& v) {
  return is_int(v) ? static_cast<double>(as_int(v)) : v.get<double>();
}

// -1, 0, 1 for numbers (ints exactly, across int and double as Kubernetes' CEL allows),
// strings and bools; nullopt when the two cannot be ordered.
std::optional<int> order(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) {
    if (is_int(a) && is_int(b)) return as_int(a) < as_int(b) ? -1 : as_int(a) > as_int(b) ? 1 : 0;
    const double x = as_double(a), y = as_double(b);
    if (std::isnan(x) || std::isnan(y)) return std::nullopt;
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.get<std::string>().compare(b.get<std::string>());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_boolean() && b.is_boolean()) return static_cast<int>(a.get<bool>()) - b.get<bool>();
  return std::nullopt;
}

// CEL's heterogeneous equality: numbers by value, other values of different types unequal.
bool equal(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return order(a, b) == 0;
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!equal(a[i], b[i])) return false;
    return true;
  }
  return a == b;
}

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

class Evaluator {
 public:
  Evaluator(const std::string& rule, const json& self) : text_(rule), self_(self) { tokenize(); }

  Value run() {
    Value v = conditional();
    if (pos_ != tokens_.size())
      throw Unsupported("unexpected \"" + tokens_[pos_].text + "\"", true);
    return v;
  }

 private:
  enum class Kind { kIdent, kInt, kDouble, kString, kPunct };
  struct Token {
    Kind kind;
    std::string text;
  };

  void tokenize() {
    size_t i = 0;
    while (i < text_.size()) {
      const char c = text_[i];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t j = i;
        while (j < text_.size() &&
               (std::isalnum(static_cast<unsigned char>(text_[j])) || text_[j] == '_'))
          ++j;
        tokens_.push_back({Kind::kIdent, text_.substr(i, j - i)});
        i = j;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        size_t j = i;
        bool is_double = false;
        while (j < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[j])) ||
                                    text_[j] == '.' || text_[j] == 'e' || text_[j] == 'E')) {
          is_double = is_double || !std::isdigit(static_cast<unsigned char>(text_[j]));
          ++j;
        }
        tokens_.push_back({is_double ? Kind::kDouble : Kind::kInt, text_.substr(i, j - i)});
        i = j;
      } else if (c == '\'' || c == '"') {
        std::string s;
        size_t j = i + 1;
        while (j < text_.size() && text_[j] != c) {
          if (text_[j] == '\\' && j + 1 < text_.size()) ++j;
          s += text_[j++];
        }
        if (j >= text_.size()) throw Unsupported("an unterminated string", true);
        tokens_.push_back({Kind::kString, s});
        i = j + 1;
      } else {
        static const char* const two[] = {"==", "!=", "<=", ">=", "&&", "||"};
        std::string op(1, c);
        for (const char* t : two)
          if (text_.compare(i, 2, t) == 0) op = t;
        if (op.size() == 1 && std::string("()[].,!<>?:+-*/%").find(c) == std::string::npos)
          throw Unsupported(std::string("the character '") + c + "'");
        tokens_.push_back({Kind::kPunct, op});
        i += op.size();
      }
    }
  }

  bool peek(const std::string& punct, size_t ahead = 0) const {
    return pos_ + ahead < tokens_.size() && tokens_[pos_ + ahead].kind == Kind::kPunct &&
           tokens_[pos_ + ahead].text == punct;
  }
  bool accept(const std::string& punct) {
    if (!peek(punct)) return false;
    ++pos_;
    return true;
  }
  void expect(const std::string& punct) {
    if (!accept(punct))
      throw Unsupported(
          "expected \"" + punct + "\"" +
              (pos_ < tokens_.size() ? " before \"" + tokens_[pos_].text + "\"" : " at the end"),
          true);
  }
  std::string identifier() {
    if (pos_ >= tokens_.size() || tokens_[pos_].kind != Kind::kIdent)
      throw Unsupported("expected a field name", true);
    return tokens_[pos_++].text;
  }

  // Nesting guard: a CRD's rule is an admin's, but the sim never recurses without bound.
  struct Depth {
    explicit Depth(int& d) : d_(d) {
      if (++d_ > 64) throw Unsupported("a rule nested more than 64 deep");
    }
    ~Depth() { --d_; }
    int& d_;
  };

  Value conditional() {
    Depth guard(depth_);
    Value c = logical_or();
    if (!accept("?")) return c;
    Value yes = conditional();
    expect(":");
    Value no = conditional();
    if (c.failed()) return c;
    if (!c.v.is_boolean()) return no_overload("_?_:_", c);
    return c.v.get<bool>() ? yes : no;
  }

  // `||` and `&&`: a decisive operand wins over an error in the other, in either order.
  Value logical_or() {
    Value a = logical_and();
    while (accept("||")) a = logic(a, logical_and(), true);
    return a;
  }
  Value logical_and() {
    Value a = relation();
    while (accept("&&")) a = logic(a, relation(), false);
    return a;
  }
  static Value logic(const Value& a, const Value& b, bool is_or) {
    const bool decisive = is_or;  // true decides ||, false decides &&
    for (const Value* v : {&a, &b})
      if (!v->failed() && v->v.is_boolean() && v->v.get<bool>() == decisive) return {decisive, ""};
    for (const Value* v : {&a, &b}) {
      if (v->failed()) return *v;
      if (!v->v.is_boolean()) return no_overload(is_or ? "_||_" : "_&&_", *v);
    }
    return {!decisive, ""};
  }

  Value relation() {
    Value a = additive();
    for (;;) {
      std::string op;
      for (const char* o : {"==", "!=", "<=", ">=", "<", ">"})
        if (peek(o)) op = o;
      const bool in =
          pos_ < tokens_.size() && tokens_[pos_].kind == Kind::kIdent && tokens_[pos_].text == "in";
      if (op.empty() && !in) return a;
      ++pos_;
      Value b = additive();
      if (a.failed()) continue;
      if (b.failed()) {
        a = b;
        continue;
      }
      if (in) {
        a = contains(b, a);
      } else if (op == "==" || op == "!=") {
        a = {equal(a.v, b.v) == (op == "=="), ""};
      } else {
        const auto o = order(a.v, b.v);
        if (!o) {
          a = no_overload(op, a, b);
          continue;
        }
        a = {op == "<" ? *o < 0 : op == "<=" ? *o <= 0 : op == ">" ? *o > 0 : *o >= 0, ""};
      }
    }
  }
  static Value contains(const Value& container, const Value& item) {
    if (container.v.is_array()) {
      for (const auto& e : container.v)
        if (equal(e, item.v)) return {true, ""};
      return {false, ""};
    }
    if (container.v.is_object() && item.v.is_string())
      return {container.v.contains(item.v.get<std::string>()), ""};
    return no_overload("in", item, container);
  }

  Value additive() {
    Value a = multiplicative();
    for (;;) {
      const std::string op = peek("+") ? "+" : peek("-") ? "-" : "";
      if (op.empty()) return a;
      ++pos_;
      a = arithmetic(op, a, multiplicative());
    }
  }
  Value multiplicative() {
    Value a = unary();
    for (;;) {
      const std::string op = peek("*") ? "*" : peek("/") ? "/" : peek("%") ? "%" : "";
      if (op.empty()) return a;
      ++pos_;
      a = arithmetic(op, a, unary());
    }
  }
  static Value arithmetic(const std::string& op, const Value& a, const Value& b) {
    if (a.failed()) return a;
    if (b.failed()) return b;
    if (op == "+" && a.v.is_string() && b.v.is_string())
      return {a.v.get<std::string>() + b.v.get<std::string>(), ""};
    if (op == "+" && a.v.is_array() && b.v.is_array()) {
      json out = a.v;
      for (const auto& e : b.v) out.push_back(e);
      return {out, ""};
    }
    if (is_int(a.v) && is_int(b.v)) {
      const int64_t x = as_int(a.v), y = as_int(b.v);
      int64_t r = 0;
      bool overflow = false;
      if (op == "+") overflow = __builtin_add_overflow(x, y, &r);
      if (op == "-") overflow = __builtin_sub_overflow(x, y, &r);
      if (op == "*") overflow = __builtin_mul_overflow(x, y, &r);
      if (op == "/" || op == "%") {
        if (y == 0) return fail(op == "/" ? "division by zero" : "modulus by zero");
        if (x == INT64_MIN && y == -1) return fail("integer overflow");
        r = op == "/" ? x / y : x % y;
      }
      if (overflow) return fail("integer overflow");
      return {r, ""};
    }
    if (a.v.is_number_float() && b.v.is_number_float() && op != "%") {
      const double x = a.v.get<double>(), y = b.v.get<double>();
      return {op == "+" ? x + y : op == "-" ? x - y : op == "*" ? x * y : x / y, ""};
    }
    return no_overload(op, a, b);
  }

  Value unary() {
    if (accept("!")) {
      Value v = unary();
      if (v.failed()) return v;
      if (!v.v.is_boolean()) return no_overload("!_", v);
      return {!v.v.get<bool>(), ""};
    }
    if (accept("-")) {
      Value v = unary();
      if (v.failed()) return v;
      if (is_int(v.v)) {
        if (as_int(v.v) == INT64_MIN) return fail("integer overflow");
        return {-as_int(v.v), ""};
      }
      if (v.v.is_number_float()) return {-v.v.get<double>(), ""};
      return no_overload("-_", v);
    }
    return member(false);
  }

  // A primary and its selections, indexes and method calls. With `presence` (inside
  // has()), the last field selection tests whether the field is there instead.
  Value member(bool presence) {
    Value cur = primary();
    for (;;) {
      if (accept(".")) {
        const std::string name = identifier();
        if (accept("(")) {
          // Named before its arguments are read: a macro's (all, exists) are not values.
          if (name != "size" && name != "startsWith" && name != "endsWith" && name != "contains")
            throw Unsupported("the method " + name + "()");
          cur = method(cur, name, arguments());
          continue;
        }
        if (presence && peek(")")) {
          if (cur.failed()) return cur;
          if (!cur.v.is_object())
            return fail("type '" + type_name(cur.v) + "' does not support field selection");
          return {cur.v.contains(name), ""};
        }
        cur = select(cur, name);
      } else if (accept("[")) {
        Value key = conditional();
        expect("]");
        cur = index(cur, key);
      } else {
        break;
      }
    }
    if (presence)
      throw Unsupported("has() takes a field selection, as in has(self.minNodes)", true);
    return cur;
  }

  std::vector<Value> arguments() {
    std::vector<Value> args;
    if (accept(")")) return args;
    do {
      args.push_back(conditional());
    } while (accept(","));
    expect(")");
    return args;
  }

  static Value select(const Value& from, const std::string& name) {
    if (from.failed()) return from;
    if (!from.v.is_object())
      return fail("type '" + type_name(from.v) + "' does not support field selection");
    if (!from.v.contains(name)) return fail("no such key: " + name);
    return {from.v.at(name), ""};
  }
  static Value index(const Value& from, const Value& key) {
    if (from.failed()) return from;
    if (key.failed()) return key;
    if (from.v.is_object() && key.v.is_string()) return select(from, key.v.get<std::string>());
    if (from.v.is_array() && is_int(key.v)) {
      const int64_t i = as_int(key.v);
      if (i < 0 || static_cast<size_t>(i) >= from.v.size())
        return fail("index out of bounds: " + std::to_string(i));
      return {from.v[static_cast<size_t>(i)], ""};
    }
    return no_overload("_[_]", from, key);
  }

  static Value size_of(const Value& v) {
    if (v.failed()) return v;
    if (v.v.is_string()) return {static_cast<int64_t>(code_points(v.v.get<std::string>())), ""};
    if (v.v.is_array() || v.v.is_object()) return {static_cast<int64_t>(v.v.size()), ""};
    return no_overload("size", v);
  }

  static Value method(const Value& target, const std::string& name,
                      const std::vector<Value>& args) {
    if (name == "size" && args.empty()) return size_of(target);
    if ((name == "startsWith" || name == "endsWith" || name == "contains") && args.size() == 1) {
      if (target.failed()) return target;
      if (args[0].failed()) return args[0];
      if (!target.v.is_string() || !args[0].v.is_string())
        return no_overload(name, target, args[0]);
      const std::string s = target.v.get<std::string>(), t = args[0].v.get<std::string>();
      if (name == "startsWith") return {s.rfind(t, 0) == 0, ""};
      if (name == "endsWith")
        return {s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0, ""};
      return {s.find(t) != std::string::npos, ""};
    }
    throw Unsupported("the method " + name + "() with " + std::to_string(args.size()) +
                      " argument(s)");
  }

  Value primary() {
    if (pos_ >= tokens_.size()) throw Unsupported("the rule ends early", true);
    const Token t = tokens_[pos_++];
    switch (t.kind) {
      case Kind::kInt:
        try {
          return {static_cast<int64_t>(std::stoll(t.text)), ""};
        } catch (const std::exception&) {
          throw Unsupported("the integer " + t.text, true);
        }
      case Kind::kDouble:
        try {
          return {std::stod(t.text), ""};
        } catch (const std::exception&) {
          throw Unsupported("the number " + t.text, true);
        }
      case Kind::kString:
        return {t.text, ""};
      case Kind::kPunct:
        if (t.text == "(") {
          Value v = conditional();
          expect(")");
          return v;
        }
        if (t.text == "[") {
          json list = json::array();
          Value failed;
          if (!accept("]")) {
            do {
              Value e = conditional();
              if (e.failed() && !failed.failed()) failed = e;
              list.push_back(e.v);
            } while (accept(","));
            expect("]");
          }
          if (failed.failed()) return failed;
          return {list, ""};
        }
        throw Unsupported("unexpected \"" + t.text + "\"", true);
      case Kind::kIdent:
        break;
    }
    if (t.text == "self") return {self_, ""};
    if (t.text == "true" || t.text == "false") return {t.text == "true", ""};
    if (t.text == "null") return {nullptr, ""};
    if (t.text == "has" && accept("(")) {
      Value v = member(true);
      expect(")");
      return v;
    }
    if (t.text == "size" && accept("(")) {
      const auto args = arguments();
      if (args.size() != 1)
        throw Unsupported("size() with " + std::to_string(args.size()) + " arguments");
      return size_of(args[0]);
    }
    throw Unsupported("\"" + t.text + "\"" + (t.text == "oldSelf" ? " (transition rules)" : ""));
  }

  std::string text_;
  const json& self_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

CelResult evaluate_cel_rule(const std::string& rule, const nlohmann::json& self_value) {
  try {
    const Value v = Evaluator(rule, self_value).run();
    if (v.failed()) return {std::nullopt, v.error};
    if (!v.v.is_boolean())
      return {std::nullopt, "the rule yields " + type_name(v.v) + ", not bool"};
    return {v.v.get<bool>(), ""};
  } catch (const Unsupported& e) {
    return {std::nullopt,
            std::string("the simulated cluster cannot evaluate this rule (") + e.what() +
                "; sim/cel_rules.h lists what it can)",
            !e.syntax};
  }
}

std::string cel_rule_compile_error(const std::string& rule) {
  try {
    Evaluator(rule, nullptr).run();  // every field of null is an error value, not a throw
    return "";
  } catch (const Unsupported& e) {
    return e.syntax ? std::string("Syntax error: ") + e.what() : "";
  }
}

}  // namespace commgate::sim
