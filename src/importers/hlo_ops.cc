#include "importers/hlo_ops.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <limits>
#include <utility>

#include "core/enum_names.h"

namespace shardscope::importers {
namespace {

// The HLO opcodes of the collectives (ragged-all-to-all, which moves like
// all-to-all, is classified apart).
constexpr auto kHloCollectiveNames = MakeEnumNames<HloCollective>({
    {HloCollective::kAllReduce, "all-reduce"},
    {HloCollective::kAllGather, "all-gather"},
    {HloCollective::kReduceScatter, "reduce-scatter"},
    {HloCollective::kAllToAll, "all-to-all"},
    {HloCollective::kCollectivePermute, "collective-permute"},
    {HloCollective::kCollectiveBroadcast, "collective-broadcast"},
});
static_assert(kHloCollectiveNames.InEnumOrder() &&
              kHloCollectiveNames.entries().back().value == HloCollective::kCollectiveBroadcast);

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool IsOpen(char c) { return c == '(' || c == '[' || c == '{'; }
bool IsClose(char c) { return c == ')' || c == ']' || c == '}'; }

// Index just past the bracket that closes the one at s[open], skipping quoted strings;
// npos when unbalanced.
size_t SkipBalanced(std::string_view s, size_t open) {
  int depth = 0;
  bool quoted = false;
  for (size_t i = open; i < s.size(); ++i) {
    char c = s[i];
    if (quoted) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        quoted = false;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (IsOpen(c)) {
      ++depth;
    } else if (IsClose(c) && --depth == 0) {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// Splits `s` at commas outside brackets and quotes; items are trimmed.
std::vector<std::string_view> SplitTopLevel(std::string_view s) {
  std::vector<std::string_view> items;
  int depth = 0;
  bool quoted = false;
  size_t begin = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quoted) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        quoted = false;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (IsOpen(c)) {
      ++depth;
    } else if (IsClose(c)) {
      --depth;
    } else if (c == ',' && depth == 0) {
      items.push_back(Trim(s.substr(begin, i - begin)));
      begin = i + 1;
    }
  }
  std::string_view last = Trim(s.substr(begin));
  if (!last.empty() || !items.empty()) items.push_back(last);
  return items;
}

// Drops a trailing ".N" (instruction numbering) and a leading '%'.
std::string_view BaseName(std::string_view name) {
  if (!name.empty() && name.front() == '%') name.remove_prefix(1);
  size_t dot = name.rfind('.');
  if (dot != std::string_view::npos && dot + 1 < name.size() &&
      std::all_of(name.begin() + dot + 1, name.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    name = name.substr(0, dot);
  }
  return name;
}

// Bits per element of an HLO primitive type; nullopt when unknown.
std::optional<int64_t> ElementBits(std::string_view type) {
  static constexpr std::array<std::pair<std::string_view, int64_t>, 30> kBits = {{
      {"pred", 8},   {"s2", 2},        {"u2", 2},         {"s4", 4},         {"u4", 4},
      {"s8", 8},     {"u8", 8},        {"s16", 16},       {"u16", 16},       {"f16", 16},
      {"bf16", 16},  {"s32", 32},      {"u32", 32},       {"f32", 32},       {"s64", 64},
      {"u64", 64},   {"f64", 64},      {"c64", 64},       {"c128", 128},     {"f8e5m2", 8},
      {"f8e4m3", 8}, {"f8e4m3fn", 8},  {"f8e4m3fnuz", 8}, {"f8e5m2fnuz", 8}, {"f8e4m3b11fnuz", 8},
      {"f8e3m4", 8}, {"f8e8m0fnu", 8}, {"f4e2m1fn", 4},   {"token", 0},      {"opaque", 0},
  }};
  for (const auto& [name, bits] : kBits) {
    if (name == type) return bits;
  }
  return std::nullopt;
}

bool ParseInt(std::string_view s, int64_t* out) {
  s = Trim(s);
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// "[4,2]" → {4, 2}; advances `pos` past the ']'.
bool ParseIntList(std::string_view s, size_t* pos, char open, char close,
                  std::vector<int64_t>* out) {
  if (*pos >= s.size() || s[*pos] != open) return false;
  size_t end = s.find(close, *pos);
  if (end == std::string_view::npos) return false;
  out->clear();
  std::string_view inner = s.substr(*pos + 1, end - *pos - 1);
  if (!Trim(inner).empty()) {
    for (std::string_view item : SplitTopLevel(inner)) {
      int64_t v = 0;
      if (!ParseInt(item, &v)) return false;
      out->push_back(v);
    }
  }
  *pos = end + 1;
  return true;
}

StatusOr<std::vector<std::vector<int32_t>>> ParseIotaGroups(std::string_view value) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument("replica groups '{}': {}", value, why);
  };
  size_t pos = 0;
  std::vector<int64_t> shape, dims, perm;
  if (!ParseIntList(value, &pos, '[', ']', &shape) || shape.size() != 2) {
    return bad("expected [groups,size] first");
  }
  if (value.substr(pos, 2) != "<=") return bad("expected '<=' after the group shape");
  pos += 2;
  if (!ParseIntList(value, &pos, '[', ']', &dims) || dims.empty()) {
    return bad("expected the iota dimensions after '<='");
  }
  if (pos < value.size() && value[pos] == 'T') {
    ++pos;
    if (!ParseIntList(value, &pos, '(', ')', &perm)) return bad("malformed T(...)");
  } else {
    for (size_t i = 0; i < dims.size(); ++i) perm.push_back(static_cast<int64_t>(i));
  }
  if (pos != value.size()) return bad("unexpected text after the iota form");
  int64_t total = 1;
  for (int64_t d : dims) {
    if (d <= 0 || d > (1 << 24)) return bad("dimensions must be positive");
    total *= d;
    if (total > (1 << 24)) return bad("too many devices");
  }
  if (shape[0] <= 0 || shape[1] <= 0 || shape[0] * shape[1] != total) {
    return bad("the group shape does not hold every device of the iota");
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted.size() != dims.size() || sorted[i] != static_cast<int64_t>(i)) {
      return bad("T(...) is not a permutation of the dimensions");
    }
  }
  // Read the transposed iota row-major: position t in the transposed array holds the
  // original index o with o[perm[i]] = t[i].
  const size_t rank = dims.size();
  std::vector<int64_t> tdims(rank), t(rank, 0), o(rank);
  for (size_t i = 0; i < rank; ++i) tdims[i] = dims[perm[i]];
  std::vector<std::vector<int32_t>> groups(shape[0]);
  for (int64_t f = 0; f < total; ++f) {
    for (size_t i = 0; i < rank; ++i) o[perm[i]] = t[i];
    int64_t v = 0;
    for (size_t i = 0; i < rank; ++i) v = v * dims[i] + o[i];
    groups[f / shape[1]].push_back(static_cast<int32_t>(v));
    for (size_t i = rank; i-- > 0;) {  // next t, row-major
      if (++t[i] < tdims[i]) break;
      t[i] = 0;
    }
  }
  return groups;
}

}  // namespace

std::optional<HloInstruction> ParseHloInstruction(std::string_view text) {
  text = Trim(text);
  if (text.substr(0, 5) == "ROOT ") text = Trim(text.substr(5));
  size_t eq = text.find(" = ");
  if (eq == std::string_view::npos || eq == 0) return std::nullopt;
  HloInstruction inst;
  inst.name = text.substr(0, eq);
  if (inst.name.front() == '%') inst.name.remove_prefix(1);
  if (inst.name.empty() || inst.name.find(' ') != std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(eq + 3);
  // The shape ends at the first space outside brackets.
  size_t i = 0;
  while (i < rest.size() && rest[i] != ' ') {
    if (IsOpen(rest[i])) {
      i = SkipBalanced(rest, i);
      if (i == std::string_view::npos) return std::nullopt;
    } else {
      ++i;
    }
  }
  if (i == 0 || i >= rest.size()) return std::nullopt;
  inst.shape = rest.substr(0, i);
  rest = Trim(rest.substr(i));
  size_t paren = rest.find('(');
  if (paren == std::string_view::npos || paren == 0) return std::nullopt;
  inst.opcode = rest.substr(0, paren);
  if (!std::all_of(inst.opcode.begin(), inst.opcode.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
      })) {
    return std::nullopt;
  }
  size_t close = SkipBalanced(rest, paren);
  if (close == std::string_view::npos) return std::nullopt;
  inst.operands = Trim(rest.substr(paren + 1, close - paren - 2));
  rest = Trim(rest.substr(close));
  if (!rest.empty() && rest.front() == ',') rest = Trim(rest.substr(1));
  inst.attributes = rest;
  return inst;
}

std::string_view HloAttribute(std::string_view attributes, std::string_view key) {
  for (std::string_view item : SplitTopLevel(attributes)) {
    if (item.size() > key.size() && item.substr(0, key.size()) == key && item[key.size()] == '=') {
      return Trim(item.substr(key.size() + 1));
    }
  }
  return {};
}

std::vector<std::string_view> HloOperandNames(std::string_view operands) {
  std::vector<std::string_view> names;
  for (std::string_view item : SplitTopLevel(operands)) {
    size_t pct = item.rfind('%');
    if (pct == std::string_view::npos) continue;
    names.push_back(Trim(item.substr(pct + 1)));
  }
  return names;
}

std::optional<HloCollectiveOp> ClassifyHloCollective(std::string_view opcode_or_name) {
  std::string_view base = BaseName(Trim(opcode_or_name));
  HloCollectiveOp result;
  for (auto [suffix, part] : {std::pair{std::string_view("-start"), AsyncPart::kStart},
                              std::pair{std::string_view("-done"), AsyncPart::kDone}}) {
    if (base.size() > suffix.size() && base.substr(base.size() - suffix.size()) == suffix) {
      base.remove_suffix(suffix.size());
      result.part = part;
      break;
    }
  }
  std::optional<HloCollective> op =
      base == "ragged-all-to-all" ? HloCollective::kAllToAll : kHloCollectiveNames.Parse(base);
  if (!op) return std::nullopt;
  result.op = *op;
  return result;
}

trace::Collective ToTraceCollective(HloCollective op) {
  switch (op) {
    case HloCollective::kAllReduce:
      return trace::Collective::kAllReduce;
    case HloCollective::kAllGather:
      return trace::Collective::kAllGather;
    case HloCollective::kReduceScatter:
      return trace::Collective::kReduceScatter;
    case HloCollective::kAllToAll:
      return trace::Collective::kAllToAll;
    case HloCollective::kCollectivePermute:
      return trace::Collective::kSend;
    case HloCollective::kCollectiveBroadcast:
      return trace::Collective::kBroadcast;
  }
  return trace::Collective::kNone;
}

std::string_view HloCollectiveName(HloCollective op) { return kHloCollectiveNames.Name(op, ""); }

StatusOr<int64_t> HloShapeBytes(std::string_view shape) {
  auto bad = [&]() { return InvalidArgument("malformed HLO shape '{}'", shape); };
  int64_t total = 0;
  size_t i = 0;
  bool any = false;
  while (i < shape.size()) {
    char c = shape[i];
    if (c == '(' || c == ')' || c == ',' || c == ' ') {
      ++i;
      continue;
    }
    if (c == '{') {  // a layout, skipped
      i = SkipBalanced(shape, i);
      if (i == std::string_view::npos) return bad();
      continue;
    }
    size_t type_begin = i;
    while (i < shape.size() && std::isalnum(static_cast<unsigned char>(shape[i]))) ++i;
    std::string_view type = shape.substr(type_begin, i - type_begin);
    if (type.empty() || i >= shape.size() || shape[i] != '[') return bad();
    size_t close = shape.find(']', i);
    if (close == std::string_view::npos) return bad();
    int64_t elements = 1;
    std::string_view dims = shape.substr(i + 1, close - i - 1);
    if (!Trim(dims).empty()) {
      for (std::string_view d : SplitTopLevel(dims)) {
        if (d.substr(0, 2) == "<=") d.remove_prefix(2);  // bounded dynamic: its bound
        int64_t n = 0;
        if (!ParseInt(d, &n) || n < 0) return bad();
        if (n > 0 && elements > (int64_t{1} << 60) / n) return bad();
        elements *= n;
      }
    }
    std::optional<int64_t> bits = ElementBits(type);
    if (!bits) return InvalidArgument("unknown element type '{}' in shape '{}'", type, shape);
    if (elements > (int64_t{1} << 56) || total > (int64_t{1} << 62)) return bad();
    total += (elements * *bits + 7) / 8;
    any = true;
    i = close + 1;
  }
  if (!any && Trim(shape) != "()") return bad();
  return total;
}

std::string_view HloElementType(std::string_view shape) {
  size_t bracket = shape.find('[');
  if (bracket == std::string_view::npos) return {};
  size_t begin = bracket;
  while (begin > 0 && std::isalnum(static_cast<unsigned char>(shape[begin - 1]))) --begin;
  return shape.substr(begin, bracket - begin);
}

StatusOr<int64_t> HloOperandBytes(std::string_view operands) {
  int64_t total = 0;
  for (std::string_view item : SplitTopLevel(operands)) {
    size_t pct = item.rfind(" %");
    if (item.empty() || item.front() == '%' || pct == std::string_view::npos) {
      return NotFound("operand '{}' is printed without its shape", item);
    }
    ASSIGN_OR_RETURN(int64_t bytes, HloShapeBytes(Trim(item.substr(0, pct))));
    total += bytes;
  }
  return total;
}

StatusOr<std::vector<std::vector<int32_t>>> ParseReplicaGroups(std::string_view value) {
  value = Trim(value);
  if (value.empty()) return InvalidArgument("empty replica groups");
  if (value.front() == '[') return ParseIotaGroups(value);
  if (value.front() != '{' || value.back() != '}') {
    return InvalidArgument("replica groups '{}': expected {{...}} or [G,S]<=[...]", value);
  }
  std::vector<std::vector<int32_t>> groups;
  std::string_view inner = Trim(value.substr(1, value.size() - 2));
  if (inner.empty()) return groups;
  for (std::string_view item : SplitTopLevel(inner)) {
    if (item.size() < 2 || item.front() != '{' || item.back() != '}') {
      return InvalidArgument("replica groups '{}': '{}' is not a {{...}} group", value, item);
    }
    std::vector<int32_t>& group = groups.emplace_back();
    std::string_view ids = Trim(item.substr(1, item.size() - 2));
    if (ids.empty()) continue;
    for (std::string_view id : SplitTopLevel(ids)) {
      int64_t v = 0;
      if (!ParseInt(id, &v) || v < 0 || v > INT32_MAX) {
        return InvalidArgument("replica groups '{}': '{}' is not a device id", value, id);
      }
      group.push_back(static_cast<int32_t>(v));
    }
  }
  return groups;
}

StatusOr<int64_t> HloCollectiveBytes(const HloInstruction& inst, HloCollectiveOp kind,
                                     int64_t group_size) {
  const int64_t n = std::max<int64_t>(group_size, 1);
  StatusOr<int64_t> operand = HloOperandBytes(inst.operands);
  if (operand.ok()) {
    if (kind.op != HloCollective::kAllGather) return *operand;
    if (*operand > std::numeric_limits<int64_t>::max() / n) {
      return InvalidArgument("'{}': size overflows", inst.name);
    }
    return *operand * n;
  }
  if (operand.status().code() != StatusCode::kNotFound) return operand.status();
  if (kind.part != AsyncPart::kSync) {
    return InvalidArgument(
        "'{}': operand shapes not printed, and the result of a -start op is "
        "not the message",
        inst.name);
  }
  ASSIGN_OR_RETURN(int64_t result, HloShapeBytes(inst.shape));
  if (kind.op != HloCollective::kReduceScatter) return result;
  if (result > std::numeric_limits<int64_t>::max() / n) {
    return InvalidArgument("'{}': size overflows", inst.name);
  }
  return result * n;
}

}  // namespace shardscope::importers
