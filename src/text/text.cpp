//===- text.cpp - IR printer, parser, verifier ----------------------------===//
#include "aotc/text/text.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>
#include <string_view>
#include <unordered_set>

#include "aotc/ir/autocast_tags.h"
#include "aotc/ir/unify.h"
#include "aotc/ops/ops.h"

namespace aotc {

// ---------------------------------------------------------------- printer

namespace {
std::string quote(const std::string& s) { return attrStr(AttrValue{s}); }

/// Attributes; those in `sym` (Note [Symbolic types]) as their expressions.
std::string attrsStr(const Attrs& a, const std::map<std::string, std::vector<sym::Expr>>& sym = {}) {
  if (a.empty()) return "";
  std::string s = " {";
  bool first = true;
  for (auto& [k, v] : a) {
    s += (first ? "" : ", ") + k + "=";
    first = false;
    auto e = sym.find(k);
    if (e == sym.end()) {
      s += attrStr(v);
    } else if (std::holds_alternative<int64_t>(v)) {
      s += e->second.at(0).str();
    } else {
      s += "[";
      for (size_t i = 0; i < e->second.size(); ++i) s += (i ? ", " : "") + e->second[i].str();
      s += "]";
    }
  }
  return s + "}";
}

std::string tagsStr(const Node& n) {
  std::string s;
  if (n.phase == Phase::Backward) s += " #bw";
  if (n.tags & kMustSave) s += " #must_save";
  if (n.tags & kMustBeInForward) s += " #must_be_in_forward";
  if (n.tags & kMustBeInBackward) s += " #must_be_in_backward";
  if (n.tags & kAutocastBf16) s += " #autocast_bf16";
  if (n.tags & kAutocastFp16) s += " #autocast_fp16";
  if (n.tags & kAutocastOff) s += " #autocast_off";
  return s;
}
}  // namespace

namespace {
std::string printGraphIndented(const Graph& g, const std::string& ind);

/// One node's line, without indent, regions or newline.
std::string nodeLine(const Graph& g, const Node& n) {
  auto vn = [&](ValueId v) { return "%" + g.values[v].name; };
  std::string s;
  for (size_t i = 0; i < n.outputs.size(); ++i) s += (i ? ", " : "") + vn(n.outputs[i]) + " : " + g.type(n.outputs[i]).str();
  if (!n.outputs.empty()) s += " = ";
  s += std::string(opName(n.op)) + "(";
  for (size_t i = 0; i < n.inputs.size(); ++i) s += (i ? ", " : "") + vn(n.inputs[i]);
  s += ")" + attrsStr(n.attrs, n.symAttrs) + tagsStr(n);
  if (!n.loc.node.empty() || !n.loc.op.empty() || !n.loc.source.empty() || !n.loc.scope.empty()) {
    s += " loc(" + quote(n.loc.node) + ", " + quote(n.loc.op);
    if (!n.loc.source.empty() || !n.loc.scope.empty()) s += ", " + quote(n.loc.source) + ", " + quote(n.loc.scope);
    s += ")";
  }
  return s;
}
}  // namespace

std::string printNode(const Graph& g, const Node& n) {
  std::string s = nodeLine(g, n);
  if (!n.regions.empty()) s += " regions {" + std::to_string(n.regions.size()) + " graphs}";
  return s;
}

std::string printGraph(const Graph& g) { return printGraphIndented(g, ""); }

namespace {
std::string printGraphIndented(const Graph& g, const std::string& ind) {
  std::string s = ind + "graph @" + g.name + " {\n";
  for (const SymbolDecl& sd : g.symbols)
    s += ind + "  symbol " + sd.name + " = " + std::to_string(sd.hint) + " in [" + std::to_string(sd.min) + ", " +
         std::to_string(sd.max) + "]\n";
  for (const SizeGuard& gd : g.guards) s += ind + "  guard divisible(" + gd.expr.str() + ", " + std::to_string(gd.divisor) + ")\n";
  auto vn = [&](ValueId v) { return "%" + g.values[v].name; };
  for (auto& in : g.inputs) {
    s += ind + "  input " + vn(in.value) + " : " + g.type(in.value).str() + " " + inputRoleName(in.role);
    if (in.requires_grad) s += " requires_grad";
    s += "\n";
  }
  for (auto& n : g.nodes) {
    s += ind + "  " + nodeLine(g, n);
    if (!n.regions.empty()) {
      s += " regions {\n";
      for (auto& r : n.regions) s += printGraphIndented(r, ind + "    ");
      s += ind + "  }";
    }
    s += "\n";
  }
  for (auto& o : g.outputs) {
    s += ind + "  output " + vn(o.value) + " " + outputRoleName(o.role);
    if (!o.target.empty()) s += "(" + quote(o.target) + ")";
    if (o.alias_of) {
      s += " alias(" + quote(*o.alias_of) + ", [";
      for (size_t i = 0; i < o.alias_chain.size(); ++i)
        s += (i ? ", " : "") + std::string(opName(o.alias_chain[i].op)) + attrsStr(o.alias_chain[i].attrs, o.alias_chain[i].symAttrs);
      s += "])";
    }
    s += "\n";
  }
  return s + ind + "}\n";
}
}  // namespace

// ---------------------------------------------------------------- parser

namespace {

enum class Tok { Ident, Value, Global, Int, Float, String, Punct, Hash, End };

struct Token {
  Tok kind;
  std::string text;
  int line;
};

class Lexer {
 public:
  Lexer(const std::string& src, std::string file) : src_(src), file_(std::move(file)) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    while (true) {
      skip();
      if (pos_ >= src_.size()) break;
      char c = src_[pos_];
      int line = line_;
      auto isName = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '-'; };
      if (c == '%' && (pos_ + 1 >= src_.size() || !isName(src_[pos_ + 1]))) {  // modulo, in a size expression
        out.push_back({Tok::Punct, "%", line});
        ++pos_;
      } else if (c == '/' && src_.compare(pos_, 2, "//") == 0) {  // floor division (a comment starts a line: skip())
        out.push_back({Tok::Punct, "//", line});
        pos_ += 2;
      } else if (c == '%' || c == '@' || c == '#') {
        size_t b = ++pos_;
        while (pos_ < src_.size() && isName(src_[pos_])) ++pos_;
        if (b == pos_) error(line, std::string("expected a name after '") + c + "'");
        out.push_back({c == '%' ? Tok::Value : c == '@' ? Tok::Global : Tok::Hash, src_.substr(b, pos_ - b), line});
      } else if (std::isdigit(static_cast<unsigned char>(c)) || (c == '-' && pos_ + 1 < src_.size() &&
                                                                 (std::isdigit(static_cast<unsigned char>(src_[pos_ + 1])) || src_[pos_ + 1] == 'i'))) {
        size_t b = pos_++;
        bool isFloat = false;
        while (pos_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '.' ||
                                      ((src_[pos_] == '-' || src_[pos_] == '+') && (src_[pos_ - 1] == 'e')))) {
          if (src_[pos_] == '.' || src_[pos_] == 'e' || src_[pos_] == 'i') isFloat = true;
          ++pos_;
        }
        out.push_back({isFloat ? Tok::Float : Tok::Int, src_.substr(b, pos_ - b), line});
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t b = pos_;
        while (pos_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) ++pos_;
        out.push_back({Tok::Ident, src_.substr(b, pos_ - b), line});
      } else if (c == '"') {
        std::string s;
        ++pos_;
        while (pos_ < src_.size() && src_[pos_] != '"') {
          if (src_[pos_] == '\n') error(line, "unterminated string");
          if (src_[pos_] == '\\' && pos_ + 1 < src_.size()) ++pos_;
          s += src_[pos_++];
        }
        if (pos_ >= src_.size()) error(line, "unterminated string");
        ++pos_;
        out.push_back({Tok::String, s, line});
      } else if (std::string("{}()[],:=+-*").find(c) != std::string::npos) {
        out.push_back({Tok::Punct, std::string(1, c), line});
        ++pos_;
      } else {
        error(line, std::string("unexpected character '") + c + "'");
      }
    }
    out.push_back({Tok::End, "", line_});
    return out;
  }

  [[noreturn]] void error(int line, const std::string& msg) {
    throw UserError(SourceLoc{file_ + ":" + std::to_string(line), "", ""}, msg);
  }

 private:
  void skip() {
    while (pos_ < src_.size()) {
      if (src_[pos_] == '\n') {
        ++line_;
        ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(src_[pos_]))) {
        ++pos_;
      } else if (src_.compare(pos_, 2, "//") == 0 && atLineStart()) {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  /// Whether only blanks precede pos_ on its line: comments take a line of
  /// their own, so `//` elsewhere is floor division (Note [Symbolic sizes]).
  bool atLineStart() const {
    for (size_t p = pos_; p-- > 0 && src_[p] != '\n';)
      if (!std::isspace(static_cast<unsigned char>(src_[p]))) return false;
    return true;
  }
  const std::string& src_;
  std::string file_;
  size_t pos_ = 0;
  int line_ = 1;
};

class Parser {
 public:
  Parser(std::vector<Token> toks, std::string file) : t_(std::move(toks)), file_(std::move(file)) {}

  Graph parse() {
    Graph g = parseOne();
    if (peek().kind != Tok::End) error(peek(), "unexpected text after the graph");
    return g;
  }

 private:
  Graph parseOne() {
    Graph g;
    expectIdent("graph");
    g.name = expect(Tok::Global).text;
    expectPunct("{");
    std::map<std::string, ValueId> names;
    auto lookup = [&](const Token& tk) {
      auto it = names.find(tk.text);
      if (it == names.end()) error(tk, "use of undefined value %" + tk.text);
      return it->second;
    };
    auto define = [&](const Token& tk, TensorType ty) {
      if (names.count(tk.text)) error(tk, "value %" + tk.text + " is defined twice");
      ValueId v = g.newValue(tk.text, std::move(ty));
      names[tk.text] = v;
      return v;
    };
    while (!isPunct("}")) {
      const Token& head = peek();
      if (head.kind == Tok::Ident && head.text == "symbol") {  // Note [Symbolic types]
        next();
        Token name = expect(Tok::Ident);
        SymbolDecl d;
        d.name = name.text;
        expectPunct("=");
        d.hint = toInt(expect(Tok::Int));
        expectIdent("in");
        expectPunct("[");
        d.min = toInt(expect(Tok::Int));
        expectPunct(",");
        d.max = toInt(expect(Tok::Int));
        expectPunct("]");
        hints_[d.name] = d.hint;
        if (std::string why = declareSymbol(g.symbols, std::move(d)); !why.empty()) error(name, why);
      } else if (head.kind == Tok::Ident && head.text == "guard") {
        next();
        expectIdent("divisible");
        expectPunct("(");
        const Token& at = peek();
        SizeGuard gd;
        gd.expr = parseExpr();
        expectPunct(",");
        gd.divisor = toInt(expect(Tok::Int));
        expectPunct(")");
        if (gd.divisor < 2) error(at, "a guard's divisor must be at least 2");
        g.guards.push_back(std::move(gd));
      } else if (head.kind == Tok::Ident && head.text == "input") {
        next();
        Token name = expect(Tok::Value);
        expectPunct(":");
        TensorType ty = parseType();
        Token role = expect(Tok::Ident);
        auto r = parseInputRole(role.text);
        if (!r) error(role, "unknown input role '" + role.text + "'");
        bool rg = false;
        if (peek().kind == Tok::Ident && peek().text == "requires_grad") {
          next();
          rg = true;
        }
        ValueId v = define(name, ty);
        g.inputs.push_back(GraphInput{v, *r, rg});
      } else if (head.kind == Tok::Ident && head.text == "output") {
        next();
        GraphOutput o;
        o.value = lookup(expect(Tok::Value));
        Token role = expect(Tok::Ident);
        if (role.text == "user") o.role = OutputRole::User;
        else if (role.text == "grad") o.role = OutputRole::Grad;
        else if (role.text == "saved") o.role = OutputRole::Saved;
        else if (role.text == "input_meta") o.role = OutputRole::InputMeta;
        else error(role, "unknown output role '" + role.text + "'");
        if (isPunct("(")) {
          next();
          o.target = expect(Tok::String).text;
          expectPunct(")");
        }
        if (peek().kind == Tok::Ident && peek().text == "alias") {
          next();
          expectPunct("(");
          o.alias_of = expect(Tok::String).text;
          expectPunct(",");
          expectPunct("[");
          while (!isPunct("]")) {
            Token op = expect(Tok::Ident);
            auto k = opFromName(op.text);
            if (!k) error(op, "unknown op '" + op.text + "'");
            ViewStep step{*k, {}};
            step.attrs = parseAttrs(&step.symAttrs);
            o.alias_chain.push_back(std::move(step));
            if (isPunct(",")) next();
          }
          next();
          expectPunct(")");
        }
        g.outputs.push_back(std::move(o));
      } else {
        std::vector<std::pair<Token, TensorType>> defs;
        while (peek().kind == Tok::Value) {
          Token name = next();
          expectPunct(":");
          defs.emplace_back(name, parseType());
          if (isPunct(",")) next();
          else break;
        }
        if (!defs.empty()) expectPunct("=");
        Token op = expect(Tok::Ident);
        auto k = opFromName(op.text);
        if (!k) error(op, "unknown op '" + op.text + "'");
        Node n;
        n.op = *k;
        expectPunct("(");
        while (!isPunct(")")) {
          n.inputs.push_back(lookup(expect(Tok::Value)));
          if (isPunct(",")) next();
          else break;
        }
        expectPunct(")");
        n.attrs = parseAttrs(&n.symAttrs);
        while (peek().kind == Tok::Hash) {
          Token tag = next();
          if (tag.text == "bw") n.phase = Phase::Backward;
          else if (tag.text == "must_save") n.tags |= kMustSave;
          else if (tag.text == "must_be_in_forward") n.tags |= kMustBeInForward;
          else if (tag.text == "must_be_in_backward") n.tags |= kMustBeInBackward;
          else if (tag.text == "autocast_bf16") n.tags |= kAutocastBf16;
          else if (tag.text == "autocast_fp16") n.tags |= kAutocastFp16;
          else if (tag.text == "autocast_off") n.tags |= kAutocastOff;
          else error(tag, "unknown tag #" + tag.text);
        }
        if (peek().kind == Tok::Ident && peek().text == "loc") {
          next();
          expectPunct("(");
          n.loc.node = expect(Tok::String).text;
          expectPunct(",");
          n.loc.op = expect(Tok::String).text;
          if (isPunct(",")) {  // the user's source line and module path
            next();
            n.loc.source = expect(Tok::String).text;
            expectPunct(",");
            n.loc.scope = expect(Tok::String).text;
          }
          expectPunct(")");
        }
        n.loc.file = file_;
        if (peek().kind == Tok::Ident && peek().text == "regions") {
          next();
          expectPunct("{");
          while (!isPunct("}")) n.regions.push_back(parseOne());
          next();
        }
        for (auto& [name, ty] : defs) n.outputs.push_back(define(name, ty));
        g.appendNode(std::move(n));
      }
    }
    next();
    return g;
  }

  TensorType parseType() {
    Token d = expect(Tok::Ident);
    auto dt = parseDType(d.text);
    if (!dt) error(d, "unknown dtype '" + d.text + "'");
    TensorType t;
    t.dtype = *dt;
    std::vector<sym::Expr> sizes = parseSizeList("[", "]");
    std::optional<std::vector<sym::Expr>> strides;
    if (isPunct("{")) strides = parseSizeList("{", "}");
    sym::Expr offset = 0;
    if (isPunct("+")) {
      next();
      if (isPunct("(")) {
        next();
        offset = parseExpr();
        expectPunct(")");
      } else {
        offset = toInt(expect(Tok::Int));
      }
    }
    if (strides && strides->size() != sizes.size()) error(d, "strides and sizes differ in rank");
    for (const sym::Expr& e : sizes) t.sizes.push_back(atHints(e, d));
    t.strides = strides ? Ints{} : TensorType::contiguousStrides(t.sizes);
    if (strides)
      for (const sym::Expr& e : *strides) t.strides.push_back(atHints(e, d));
    t.offset = atHints(offset, d);
    bool symbolic = !offset.isConstant();
    for (const sym::Expr& e : sizes) symbolic = symbolic || !e.isConstant();
    if (strides)
      for (const sym::Expr& e : *strides) symbolic = symbolic || !e.isConstant();
    if (symbolic)
      t.sym = std::make_shared<const SymLayout>(SymLayout{sizes, strides ? *strides : contiguousStrides(sizes), offset});
    return t;
  }

  /// One size expression (Note [Symbolic sizes]' grammar): its tokens up to
  /// a ',' or a closing bracket outside parentheses.
  sym::Expr parseExpr() {
    const Token first = peek();
    if (first.kind == Tok::Int && pos_ + 1 < t_.size() && t_[pos_ + 1].kind == Tok::Punct &&
        (t_[pos_ + 1].text == "," || t_[pos_ + 1].text == "]" || t_[pos_ + 1].text == "}" || t_[pos_ + 1].text == ")"))
      return toInt(next());  // the common case: a plain integer
    std::string text;
    int depth = 0;
    while (true) {
      const Token& t = peek();
      if (t.kind == Tok::Punct) {
        if (t.text == "(") {
          ++depth;
        } else if (t.text == ")") {
          if (depth == 0) break;
          --depth;
        } else if ((t.text == "," && depth == 0) || t.text == "]" || t.text == "}") {
          break;
        } else if (t.text != "+" && t.text != "-" && t.text != "*" && t.text != "//" && t.text != "%" && t.text != ",") {
          error(t, "unexpected '" + t.text + "' in a size");
        }
      } else if (t.kind != Tok::Int && t.kind != Tok::Ident) {
        error(t, "expected a size");
      }
      text += (text.empty() ? "" : " ") + next().text;
    }
    if (text.empty()) error(first, "expected a size");
    try {
      return sym::Expr::parse(text);
    } catch (const std::exception& e) {
      error(first, "bad size '" + text + "': " + e.what());
    }
  }

  std::vector<sym::Expr> parseSizeList(const char* open, const char* close) {
    expectPunct(open);
    std::vector<sym::Expr> v;
    while (!isPunct(close)) {
      v.push_back(parseExpr());
      if (isPunct(",")) next();
      else break;
    }
    expectPunct(close);
    return v;
  }

  /// `e` at the declared symbols' hints (Note [Symbolic types]).
  int64_t atHints(const sym::Expr& e, const Token& at) {
    if (auto c = e.constant()) return *c;
    try {
      return e.eval(hints_);
    } catch (const std::out_of_range&) {
      error(at, "size " + e.str() + " uses a symbol the graph does not declare");
    } catch (const std::exception& x) {
      error(at, "size " + e.str() + ": " + x.what());
    }
  }

  /// Attributes; integers given as size expressions (Note [Symbolic types])
  /// go to `sym` with their values at the hints in the result.
  Attrs parseAttrs(std::map<std::string, std::vector<sym::Expr>>* sym = nullptr) {
    Attrs a;
    if (!isPunct("{")) return a;
    next();
    while (!isPunct("}")) {
      Token key = expect(Tok::Ident);
      expectPunct("=");
      const Token v = peek();
      bool keyword = v.kind == Tok::Ident && (v.text == "true" || v.text == "false" || v.text == "inf" || v.text == "nan");
      if (v.kind == Tok::Float) a[key.text] = toFloat(next());
      else if (v.kind == Tok::String) a[key.text] = next().text;
      else if (v.kind == Tok::Ident && (v.text == "true" || v.text == "false")) a[key.text] = next().text == "true";
      else if (v.kind == Tok::Ident && (v.text == "inf" || v.text == "nan")) a[key.text] = toFloat(next());
      else if (v.kind == Tok::Int || (v.kind == Tok::Ident && !keyword) || isPunct("(")) {
        sym::Expr e = parseExpr();
        a[key.text] = atHints(e, v);
        if (!e.isConstant()) {
          if (!sym) error(v, "attribute '" + key.text + "' cannot be a size expression here");
          (*sym)[key.text] = {e};
        }
      } else if (isPunct("[")) {
        std::vector<sym::Expr> es = parseSizeList("[", "]");
        Ints ints;
        bool symbolic = false;
        for (const sym::Expr& e : es) {
          ints.push_back(atHints(e, v));
          symbolic = symbolic || !e.isConstant();
        }
        a[key.text] = ints;
        if (symbolic) {
          if (!sym) error(v, "attribute '" + key.text + "' cannot hold size expressions here");
          (*sym)[key.text] = es;
        }
      } else {
        error(v, "bad attribute value for '" + key.text + "'");
      }
      if (isPunct(",")) next();
      else break;
    }
    expectPunct("}");
    return a;
  }

  int64_t toInt(const Token& tk) {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(tk.text.c_str(), &end, 10);
    if (errno || *end) error(tk, "bad integer '" + tk.text + "'");
    return v;
  }
  double toFloat(const Token& tk) {
    char* end = nullptr;
    double v = std::strtod(tk.text.c_str(), &end);
    if (*end) error(tk, "bad number '" + tk.text + "'");
    return v;
  }

  const Token& peek() const { return t_[pos_]; }
  Token next() { return t_[pos_ < t_.size() - 1 ? pos_++ : pos_]; }
  bool isPunct(const char* p) const { return peek().kind == Tok::Punct && peek().text == p; }
  void expectPunct(const char* p) {
    if (!isPunct(p)) error(peek(), std::string("expected '") + p + "'" + got());
    next();
  }
  void expectIdent(const char* w) {
    if (peek().kind != Tok::Ident || peek().text != w) error(peek(), std::string("expected '") + w + "'" + got());
    next();
  }
  Token expect(Tok k) {
    if (peek().kind != k) {
      static const char* names[] = {"identifier", "%value", "@name", "integer", "number", "string", "punctuation", "#tag", "end"};
      error(peek(), std::string("expected ") + names[static_cast<int>(k)] + got());
    }
    return next();
  }
  std::string got() const { return peek().kind == Tok::End ? ", got end of input" : ", got '" + peek().text + "'"; }
  [[noreturn]] void error(const Token& tk, const std::string& msg) const {
    throw UserError(SourceLoc{file_ + ":" + std::to_string(tk.line), "", ""}, msg);
  }

  std::vector<Token> t_;
  std::string file_;
  size_t pos_ = 0;
  sym::Bindings hints_;
};

}  // namespace

Graph parseGraph(const std::string& text, const std::string& file) {
  Lexer lx(text, file);
  Parser p(lx.run(), file);
  Graph g = p.parse();
  return g;
}

std::vector<std::string> splitInputFile(const std::string& text) {
  std::vector<std::string> parts;
  std::string cur;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t e = text.find('\n', pos);
    std::string line = text.substr(pos, e == std::string::npos ? std::string::npos : e - pos + 1);
    pos = e == std::string::npos ? text.size() : e + 1;
    if (line.rfind("// -----", 0) == 0) {
      parts.push_back(cur);
      // Keep line numbers stable for diagnostics: pad with the lines consumed.
      cur = std::string(static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n')), '\n');
    } else {
      cur += line;
    }
  }
  parts.push_back(cur);
  return parts;
}

// ---------------------------------------------------------------- verifier

namespace {
void verifyGraphIn(const Graph& g, const std::string& file, const sym::Bindings& outer);
}  // namespace

void verifyGraph(const Graph& g, const std::string& file) { verifyGraphIn(g, file, {}); }

namespace {
/// `outer`: the enclosing graph's hints, for a region (autograd_function's
/// forward and backward), whose types may use its symbols.
void verifyGraphIn(const Graph& g, const std::string& file, const sym::Bindings& outer) {
  if (g.isSymbolic()) {
    // Note [Symbolic types]: the graph at its hints is checked below; its
    // expressions are checked by checking it at every probe binding (Note
    // [Probing and unifying]), where shape inference must agree with them.
    for (const sym::Bindings& b : probeBindings(g.symbols)) {
      Graph at;
      try {
        at = instantiate(g, b);
      } catch (const UserError& e) {
        throw UserError(SourceLoc{file, "", ""}, "verifier: " + e.diagnostics().front().message);
      }
      verifyGraph(at, file + " (at " + bindingText(b) + ")");
    }
  }
  auto fail = [&](const Node* n, const std::string& msg) {
    SourceLoc loc{file, "", ""};
    if (n) {
      loc.node = n->loc.node.empty() ? (n->outputs.empty() ? "" : g.values[n->outputs[0]].name) : n->loc.node;
      loc.op = opName(n->op);
      loc.source = n->loc.source;
      loc.scope = n->loc.scope;
    }
    throw UserError(loc, "verifier: " + msg);
  };
  // Note [Symbolic types]: every expression names declared symbols and
  // equals, at their hints, the integer beside it.
  sym::Bindings hints = g.isSymbolic() ? g.hints() : outer;
  auto atHints = [&](const sym::Expr& e, const std::string& what) {
    try {
      return e.eval(hints);
    } catch (const std::exception&) {
      fail(nullptr, what + ": " + e.str() + " uses a symbol the graph does not declare");
    }
    return int64_t{0};  // (fail throws)
  };
  for (const Value& v : g.values) {
    const TensorType& t = v.type;
    if (!t.sym) continue;
    if (hints.empty()) fail(nullptr, "%" + v.name + " has a symbolic type in a graph without symbols");
    const SymLayout& l = *t.sym;
    bool ok = l.sizes.size() == t.sizes.size() && l.strides.size() == t.strides.size() && atHints(l.offset, "%" + v.name) == t.offset;
    for (size_t i = 0; ok && i < l.sizes.size(); ++i)
      ok = atHints(l.sizes[i], "%" + v.name) == t.sizes[i] && atHints(l.strides[i], "%" + v.name) == t.strides[i];
    if (!ok) fail(nullptr, "%" + v.name + ": its type " + t.str() + " is not " + TensorType{t.dtype, t.sizes, t.strides, t.offset, nullptr}.str() + " at the hints");
  }
  for (const Node& n : g.nodes)
    for (const auto& [key, es] : n.symAttrs) {
      auto it = n.attrs.find(key);
      bool ok = it != n.attrs.end();
      if (ok && std::holds_alternative<int64_t>(it->second)) ok = es.size() == 1 && atHints(es[0], key) == std::get<int64_t>(it->second);
      else if (ok && std::holds_alternative<Ints>(it->second)) {
        const Ints& iv = std::get<Ints>(it->second);
        ok = iv.size() == es.size();
        for (size_t i = 0; ok && i < iv.size(); ++i) ok = atHints(es[i], key) == iv[i];
      } else {
        ok = false;
      }
      if (!ok) fail(&n, "symbolic attribute '" + key + "' does not match its value at the hints");
    }
  std::vector<bool> defined(g.values.size(), false);
  std::unordered_set<std::string_view> names;  // views of g's names: no copies
  names.reserve(g.values.size());
  for (auto& v : g.values)
    if (!names.insert(v.name).second) fail(nullptr, "value name %" + v.name + " is not unique");
  for (auto& in : g.inputs) {
    if (in.value < 0 || static_cast<size_t>(in.value) >= g.values.size()) fail(nullptr, "bad input value id");
    if (defined[in.value]) fail(nullptr, "input %" + g.values[in.value].name + " listed twice");
    defined[in.value] = true;
    if (in.requires_grad && !isFloating(g.type(in.value).dtype))
      fail(nullptr, "input %" + g.values[in.value].name + " requires grad but is not floating point");
  }
  std::set<std::pair<ValueId, int>> copies;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    for (ValueId v : n.inputs)
      if (v < 0 || static_cast<size_t>(v) >= g.values.size() || !defined[v])
        fail(&n, "operand is used before it is defined (or in a cycle)");
    // The forward never reads the backward (libFuzzer finding, fuzz_ir: a
    // forward node fed by a `#bw` one aborted the partitioner).
    if (n.phase == Phase::Forward)
      for (ValueId v : n.inputs) {
        int32_t d = g.values[v].node;
        if (d >= 0 && g.nodes[static_cast<size_t>(d)].phase == Phase::Backward)
          fail(&n, "a forward node uses %" + g.values[v].name + ", which is computed in the backward");
      }
    std::vector<TensorType> tys;
    for (ValueId v : n.inputs) tys.push_back(g.type(v));
    std::vector<TensorType> want;
    try {
      want = inferNodeTypes(n.op, tys, n.attrs, n.regions);
    } catch (const UserError& e) {
      fail(&n, e.diagnostics().front().message);
    }
    if (want.size() != n.outputs.size())
      fail(&n, "has " + std::to_string(n.outputs.size()) + " results, expected " + std::to_string(want.size()));
    for (size_t k = 0; k < want.size(); ++k) {
      ValueId o = n.outputs[k];
      if (defined[o]) fail(&n, "value %" + g.values[o].name + " is defined twice");
      defined[o] = true;
      if (g.values[o].node != static_cast<int32_t>(i)) fail(&n, "result's defining node is wrong");
      const TensorType& have = g.type(o);
      if (have.dtype != want[k].dtype || have.sizes != want[k].sizes || have.strides != want[k].strides || have.offset != want[k].offset)
        fail(&n, "result %" + g.values[o].name + " has type " + have.str() + ", shape inference gives " + want[k].str());
    }
    for (const Graph& r : n.regions) verifyGraphIn(r, file, hints);
    if (n.op == OpKind::EpilogueCopy) {
      const GraphInput* in = g.inputOf(n.inputs[0]);
      if (!in) fail(&n, "epilogue_copy must write a graph input");
      bool fw = n.tags & kMustBeInForward, bw = n.tags & kMustBeInBackward;
      if (fw == bw) fail(&n, "epilogue_copy must be tagged must_be_in_forward or must_be_in_backward");
      if (!copies.insert({n.inputs[0], fw ? 0 : 1}).second)
        fail(&n, "two epilogue copies to %" + g.values[n.inputs[0]].name + " in one phase");
    }
  }
  for (auto& o : g.outputs) {
    if (o.value < 0 || static_cast<size_t>(o.value) >= g.values.size() || !defined[o.value])
      fail(nullptr, "graph output is not defined");
    if (o.alias_of && o.role != OutputRole::User && o.role != OutputRole::InputMeta)
      fail(nullptr, "only user outputs can alias inputs");
    if (o.role == OutputRole::InputMeta && !o.alias_of) fail(nullptr, "input_meta output names no input");
    // The forward returns the user's outputs, so none is computed in the
    // backward (libFuzzer finding, fuzz_ir: a user output made by a `#bw`
    // node left the partitioner's forward without it).
    int32_t d = g.values[o.value].node;
    if ((o.role == OutputRole::User || o.role == OutputRole::InputMeta) && d >= 0 &&
        g.nodes[static_cast<size_t>(d)].phase == Phase::Backward)
      fail(nullptr, "user output %" + g.values[o.value].name + " is computed in the backward");
  }
}

}  // namespace

}  // namespace aotc
