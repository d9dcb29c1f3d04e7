#include "graph/hlo/hlo_sharding.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "util/status_macros.h"

namespace gopt::graph::hlo {
namespace {

// More tiles than any machine has: bounds what hostile text can allocate.
constexpr int64_t kMaxTiles = int64_t{1} << 20;
constexpr int kMaxDepth = 64;

class ShardingParser {
 public:
  explicit ShardingParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<HloSharding> Parse() {
    HloSharding sharding;
    RETURN_IF_ERROR(ParseOne(&sharding, 0));
    SkipSpace();
    if (pos_ != text_.size()) return Error("text after the sharding");
    return sharding;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(
        "sharding '", text_.substr(0, 80), "' at offset ", pos_, ": ", what));
  }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t')) {
      ++pos_;
    }
  }
  bool Consume(char c) {
    SkipSpace();
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  bool ConsumeWord(absl::string_view word) {
    SkipSpace();
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  absl::StatusOr<int64_t> ParseInt() {
    SkipSpace();
    const size_t start = pos_;
    int64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      if (value > kMaxTiles) return Error("number too large");
      value = value * 10 + (text_[pos_++] - '0');
    }
    if (pos_ == start) return Error("expected a number");
    return value;
  }
  // "[a,b,c]".
  absl::StatusOr<std::vector<int64_t>> ParseBracketList() {
    if (!Consume('[')) return Error("expected '['");
    std::vector<int64_t> values;
    while (!Consume(']')) {
      if (!values.empty() && !Consume(',')) return Error("expected ',' or ']'");
      ASSIGN_OR_RETURN(int64_t value, ParseInt());
      values.push_back(value);
    }
    return values;
  }
  // Skips a balanced {...} (metadata={op_name="..."}), honouring strings.
  absl::Status SkipBraces() {
    int depth = 0;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == '"') {
        while (pos_ < text_.size() && text_[pos_] != '"') {
          pos_ += text_[pos_] == '\\' ? 2 : 1;
        }
        ++pos_;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}' && --depth == 0) {
        return absl::OkStatus();
      }
    }
    return Error("unbalanced braces");
  }

  absl::Status ParseOne(HloSharding* sharding, int depth) {
    if (depth > kMaxDepth) return Error("tuple sharding nested too deep");
    if (!Consume('{')) return Error("expected '{'");
    SkipSpace();
    if (Peek() == '{') {
      sharding->kind = HloSharding::Kind::kTuple;
      while (true) {
        sharding->elements.emplace_back();
        RETURN_IF_ERROR(ParseOne(&sharding->elements.back(), depth + 1));
        if (Consume('}')) return absl::OkStatus();
        if (!Consume(',')) return Error("expected ',' or '}' in a tuple");
      }
    }
    if (Consume('}')) {  // {} is an empty tuple sharding
      sharding->kind = HloSharding::Kind::kTuple;
      return absl::OkStatus();
    }
    if (ConsumeWord("replicated")) {
      sharding->kind = HloSharding::Kind::kReplicated;
    } else if (ConsumeWord("manual")) {
      sharding->kind = HloSharding::Kind::kManual;
    } else if (ConsumeWord("unknown")) {
      sharding->kind = HloSharding::Kind::kUnknown;
    } else if (ConsumeWord("maximal")) {
      sharding->kind = HloSharding::Kind::kMaximal;
      if (!ConsumeWord("device=")) return Error("expected 'device='");
      ASSIGN_OR_RETURN(sharding->device, ParseInt());
    } else if (ConsumeWord("devices=")) {
      sharding->kind = HloSharding::Kind::kTiled;
      RETURN_IF_ERROR(ParseTiles(sharding));
    } else {
      return Error("expected replicated, maximal, manual or devices=");
    }
    return ParseTrailing(sharding);
  }

  absl::Status ParseTiles(HloSharding* sharding) {
    ASSIGN_OR_RETURN(sharding->tile_dims, ParseBracketList());
    int64_t tiles = 1;
    for (int64_t dim : sharding->tile_dims) {
      if (dim < 1) return Error("tile dimensions must be at least 1");
      tiles *= dim;
      if (tiles > kMaxTiles) return Error("too many tiles");
    }
    SkipSpace();
    if (Peek() == '<') {
      if (!ConsumeWord("<=")) return Error("expected '<='");
      ASSIGN_OR_RETURN(std::vector<int64_t> reshape, ParseBracketList());
      std::vector<int64_t> perm;
      if (ConsumeWord("T")) {
        if (!Consume('(')) return Error("expected '(' after T");
        while (!Consume(')')) {
          if (!perm.empty() && !Consume(',')) return Error("expected ','");
          ASSIGN_OR_RETURN(int64_t axis, ParseInt());
          perm.push_back(axis);
        }
      }
      return ExpandIota(reshape, perm, tiles, sharding);
    }
    while (static_cast<int64_t>(sharding->devices.size()) < tiles) {
      if (!sharding->devices.empty() && !Consume(',')) {
        return Error(absl::StrCat("expected ", tiles, " devices"));
      }
      ASSIGN_OR_RETURN(int64_t device, ParseInt());
      sharding->devices.push_back(device);
    }
    return absl::OkStatus();
  }

  // Devices of `<=[reshape]T(perm)`: iota over reshape, transposed by perm.
  absl::Status ExpandIota(const std::vector<int64_t>& reshape,
                          std::vector<int64_t> perm, int64_t tiles,
                          HloSharding* sharding) {
    int64_t count = 1;
    for (int64_t dim : reshape) {
      if (dim < 1) return Error("iota dimensions must be at least 1");
      count *= dim;
      if (count > kMaxTiles) return Error("too many devices");
    }
    if (count != tiles) {
      return Error(
          absl::StrCat("iota of ", count, " devices for ", tiles, " tiles"));
    }
    const size_t rank = reshape.size();
    if (perm.empty()) {
      for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(i));
    }
    std::vector<bool> seen(rank, false);
    if (perm.size() != rank) return Error("transpose rank differs");
    for (int64_t axis : perm) {
      if (axis < 0 || axis >= static_cast<int64_t>(rank) || seen[axis]) {
        return Error("transpose is not a permutation");
      }
      seen[axis] = true;
    }
    // Row-major strides of the source, read in the transposed order.
    std::vector<int64_t> stride(rank, 1);
    for (size_t i = rank; i-- > 1;) stride[i - 1] = stride[i] * reshape[i];
    std::vector<int64_t> index(rank, 0);
    sharding->devices.reserve(count);
    for (int64_t n = 0; n < count; ++n) {
      int64_t device = 0;
      for (size_t i = 0; i < rank; ++i) device += index[i] * stride[perm[i]];
      sharding->devices.push_back(device);
      for (size_t i = rank; i-- > 0;) {
        if (++index[i] < reshape[perm[i]]) break;
        index[i] = 0;
      }
    }
    return absl::OkStatus();
  }

  // last_tile_dim_replicate, last_tile_dims={...}, metadata={...},
  // shard_as N, shard_like N, up to the closing '}'.
  absl::Status ParseTrailing(HloSharding* sharding) {
    while (!Consume('}')) {
      if (pos_ >= text_.size()) return Error("expected '}'");
      if (ConsumeWord("last_tile_dim_replicate")) {
        sharding->subgroup_dims = 1;
      } else if (ConsumeWord("last_tile_dims=")) {
        if (!Consume('{')) return Error("expected '{'");
        int64_t count = 0;
        while (!Consume('}')) {
          if (count > 0 && !Consume(',')) return Error("expected ','");
          SkipSpace();
          const size_t start = pos_;
          while (pos_ < text_.size() && text_[pos_] >= 'a' &&
                 text_[pos_] <= 'z') {
            ++pos_;
          }
          if (pos_ == start) return Error("expected a subgroup type");
          sharding->subgroup_types.emplace_back(
              text_.substr(start, pos_ - start));
          ++count;
        }
        sharding->subgroup_dims = count;
      } else if (ConsumeWord("metadata=")) {
        SkipSpace();
        RETURN_IF_ERROR(SkipBraces());
      } else if (ConsumeWord("shard_as") || ConsumeWord("shard_like")) {
        ASSIGN_OR_RETURN(int64_t unused, ParseInt());
        (void)unused;
      } else {
        return Error("unexpected text in sharding");
      }
    }
    if (sharding->subgroup_dims >
        static_cast<int64_t>(sharding->tile_dims.size())) {
      return Error("more subgroup dimensions than tile dimensions");
    }
    return absl::OkStatus();
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

int64_t HloSharding::TilesAlong(size_t dim) const {
  if (kind != Kind::kTiled) return 1;
  const size_t data_dims = tile_dims.size() - subgroup_dims;
  return dim < data_dims ? tile_dims[dim] : 1;
}

std::vector<int64_t> HloSharding::ShardDims(
    const std::vector<int64_t>& dims) const {
  std::vector<int64_t> shard = dims;
  for (size_t i = 0; i < shard.size(); ++i) {
    const int64_t tiles = TilesAlong(i);
    shard[i] = (shard[i] + tiles - 1) / tiles;
  }
  return shard;
}

int64_t ReplicaGroupSize(absl::string_view text) {
  size_t pos = 0;
  auto skip_space = [&] {
    while (pos < text.size() && text[pos] == ' ') ++pos;
  };
  auto consume = [&](char c) {
    skip_space();
    if (pos >= text.size() || text[pos] != c) return false;
    ++pos;
    return true;
  };
  // Counts the entries of a list closed by `close` (digits and commas).
  auto count_until = [&](char close, int64_t* last) {
    int64_t count = 0;
    while (pos < text.size() && text[pos] != close) {
      skip_space();
      const size_t start = pos;
      int64_t value = 0;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9' &&
             value <= kMaxTiles) {
        value = value * 10 + (text[pos++] - '0');
      }
      if (pos == start) return int64_t{-1};
      ++count;
      *last = value;
      skip_space();
      if (pos < text.size() && text[pos] == ',') ++pos;
    }
    return pos < text.size() ? count : int64_t{-1};
  };
  int64_t last = 0;
  if (consume('[')) {  // [groups,size]<=[...]
    const int64_t dims = count_until(']', &last);
    return dims >= 1 && last >= 1 ? last : 0;
  }
  if (!consume('{') || !consume('{')) return 0;  // {} or not a group list
  const int64_t size = count_until('}', &last);
  return size >= 1 ? size : 0;
}

absl::StatusOr<HloSharding> ParseHloSharding(absl::string_view text) {
  return ShardingParser(text).Parse();
}

}  // namespace gopt::graph::hlo
