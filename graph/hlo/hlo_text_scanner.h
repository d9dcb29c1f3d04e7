#ifndef GOPT_GRAPH_HLO_HLO_TEXT_SCANNER_H_
#define GOPT_GRAPH_HLO_HLO_TEXT_SCANNER_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "util/status_macros.h"

namespace gopt::graph::hlo {

inline bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-' || c == '$';
}

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The lexical layer of the HLO text reader: a position in a text and the
// tokens HLO text is made of (names, integers, strings, bracketed groups,
// attribute values), with errors that name the line and column. Every
// method consumes input or fails, so loops over it terminate on any bytes.
// Not thread-safe; one scanner per text. The text must outlive it.
class HloTextScanner {
 public:
  explicit HloTextScanner(absl::string_view text) : text_(text) {}

 protected:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  char PeekAt(size_t offset) const {
    return pos_ + offset < text_.size() ? text_[pos_ + offset] : '\0';
  }

  std::string Position(size_t pos) const {
    int64_t line = 1;
    size_t line_start = 0;
    const size_t end = std::min(pos, text_.size());
    for (size_t i = 0; i < end; ++i) {
      if (text_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    return absl::StrCat("line ", line, " col ", end - line_start + 1);
  }

  absl::Status Error(size_t pos, absl::string_view message) const {
    return absl::InvalidArgumentError(
        absl::StrCat("hlo text ", Position(pos), ": ", message));
  }

  // Skips whitespace, /* block */ comments and // line comments.
  void SkipSpace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '/' && PeekAt(1) == '*') {
        const size_t end = text_.find("*/", pos_ + 2);
        pos_ = end == absl::string_view::npos ? text_.size() : end + 2;
      } else if (c == '/' && PeekAt(1) == '/') {
        const size_t end = text_.find('\n', pos_);
        pos_ = end == absl::string_view::npos ? text_.size() : end + 1;
      } else {
        break;
      }
    }
  }

  bool Consume(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }

  // Consumes `word` when it is followed by a non-name character.
  bool ConsumeWord(absl::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    if (pos_ + word.size() < text_.size() &&
        IsNameChar(text_[pos_ + word.size()])) {
      return false;
    }
    pos_ += word.size();
    return true;
  }

  // A name, with the optional leading '%' dropped; empty when none.
  absl::string_view ParseName() {
    Consume('%');
    const size_t start = pos_;
    while (pos_ < text_.size() && IsNameChar(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  absl::StatusOr<int64_t> ParseInt() {
    const size_t start = pos_;
    const bool negative = Consume('-');
    if (!IsDigit(Peek())) return Error(start, "expected an integer");
    int64_t value = 0;
    while (IsDigit(Peek())) {
      const int digit = text_[pos_] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) {
        return Error(start, "integer overflows 64 bits");
      }
      value = value * 10 + digit;
      ++pos_;
    }
    return negative ? -value : value;
  }

  // Skips a string literal starting at the current '"'.
  absl::Status SkipString() {
    const size_t start = pos_;
    ++pos_;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == '\\') {
        ++pos_;
      } else if (c == '"') {
        return absl::OkStatus();
      }
    }
    return Error(start, "unterminated string");
  }

  // Reads a string literal and unescapes it.
  absl::StatusOr<std::string> ParseString() {
    const size_t start = pos_;
    if (!Consume('"')) return Error(start, "expected a string");
    std::string out;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (c == '\\' && pos_ < text_.size()) {
        const char e = text_[pos_++];
        out.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e);
      } else {
        out.push_back(c);
      }
    }
    return Error(start, "unterminated string");
  }

  // Skips a bracketed group starting at the current opener, honouring
  // strings and comments. Depth is a counter, not recursion.
  absl::Status SkipBalanced() {
    const size_t start = pos_;
    int64_t depth = 0;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '"') {
        RETURN_IF_ERROR(SkipString());
        continue;
      }
      if (c == '/' && PeekAt(1) == '*') {
        SkipSpace();
        continue;
      }
      ++pos_;
      if (c == '{' || c == '(' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ')' || c == ']') {
        if (--depth == 0) return absl::OkStatus();
      }
    }
    return Error(start, "unbalanced brackets (text ends inside them)");
  }

  // Skips one attribute value: atoms (bracketed groups, strings, bare
  // characters) up to a ',' or whitespace or an unmatched closer.
  absl::Status SkipValue() {
    SkipSpace();
    const size_t start = pos_;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '{' || c == '(' || c == '[') {
        RETURN_IF_ERROR(SkipBalanced());
      } else if (c == '"') {
        RETURN_IF_ERROR(SkipString());
      } else if (c == ',' || c == ' ' || c == '\n' || c == '\r' || c == '\t' ||
                 c == '}' || c == ')' || c == ']') {
        break;
      } else {
        ++pos_;
      }
    }
    if (pos_ == start) return Error(start, "expected an attribute value");
    return absl::OkStatus();
  }

  // The text of one value (as SkipValue), for raw attributes.
  absl::StatusOr<absl::string_view> RawValue() {
    SkipSpace();
    const size_t start = pos_;
    RETURN_IF_ERROR(SkipValue());
    return text_.substr(start, pos_ - start);
  }

  // "true" / "false" (XLA also prints module booleans as "{true}").
  absl::StatusOr<bool> ParseBool() {
    const size_t start = pos_;
    const bool braced = Consume('{');
    bool value = false;
    if (ConsumeWord("true")) {
      value = true;
    } else if (!ConsumeWord("false")) {
      return Error(start, "expected true or false");
    }
    if (braced && !Consume('}')) return Error(pos_, "expected '}'");
    return value;
  }

  // "{1,2,3}" (whitespace allowed).
  absl::Status ParseIntList(std::vector<int64_t>* out) {
    SkipSpace();
    if (!Consume('{')) return Error(pos_, "expected '{' to start a list");
    out->clear();
    while (true) {
      SkipSpace();
      if (Consume('}')) return absl::OkStatus();
      ASSIGN_OR_RETURN(int64_t value, ParseInt());
      out->push_back(value);
      SkipSpace();
      if (!Consume(',') && Peek() != '}') {
        return Error(pos_, "expected ',' or '}' in list");
      }
    }
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace gopt::graph::hlo

#endif  // GOPT_GRAPH_HLO_HLO_TEXT_SCANNER_H_
