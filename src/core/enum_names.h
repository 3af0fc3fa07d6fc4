// EnumNames: one table of {value, name} per enum, from which its name and
// parse functions are written in a line each instead of a switch and a chain
// of string compares. A table is a constexpr value; lookups are linear (the
// tables are short), with a direct hit when the entries are in enum order.
//
//   constexpr auto kDimNames = MakeEnumNames<Dim>({{Dim::kTp, "tp"}, {Dim::kSp, "sp"}});
//   std::string_view DimName(Dim d) { return kDimNames.Name(d); }
//   StatusOr<Dim> ParseDim(std::string_view s) { return kDimNames.ParseOrError(s, "dimension"); }
#ifndef SHARDSCOPE_CORE_ENUM_NAMES_H_
#define SHARDSCOPE_CORE_ENUM_NAMES_H_

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace shardscope {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

template <typename E, size_t N>
class EnumNames {
 public:
  constexpr explicit EnumNames(const std::array<EnumName<E>, N>& entries) : entries_(entries) {}

  // e's name; `missing` when the table has no entry for e.
  constexpr std::string_view Name(E e, std::string_view missing = "?") const {
    const auto i = static_cast<size_t>(e);
    if (i < N && entries_[i].value == e) return entries_[i].name;
    for (const EnumName<E>& entry : entries_) {
      if (entry.value == e) return entry.name;
    }
    return missing;
  }

  // The value named exactly s (the first entry, where two share a name); nullopt
  // for any other string.
  constexpr std::optional<E> Parse(std::string_view s) const {
    for (const EnumName<E>& entry : entries_) {
      if (entry.name == s) return entry.value;
    }
    return std::nullopt;
  }

  // The value named exactly s, or InvalidArgument "unknown <what> '<s>' (expected
  // <List()>)", the message every enum field of a config file gives.
  StatusOr<E> ParseOrError(std::string_view s, std::string_view what) const {
    if (std::optional<E> e = Parse(s)) return *e;
    return InvalidArgument("unknown {} '{}' (expected {})", what, s, List());
  }

  // The names in table order, for error messages: "a, b or c" (`last` joins the last two).
  std::string List(std::string_view last = " or ") const {
    std::string out;
    for (size_t i = 0; i < N; ++i) {
      if (i > 0) out += i + 1 == N ? last : std::string_view(", ");
      out += entries_[i].name;
    }
    return out;
  }

  // True when entry i names the value i, for every entry: with a check that the last
  // entry is the enum's last value, a static_assert that the table names every value
  // once, as a switch without default would.
  constexpr bool InEnumOrder() const {
    for (size_t i = 0; i < N; ++i) {
      if (static_cast<size_t>(entries_[i].value) != i) return false;
    }
    return true;
  }

  constexpr const std::array<EnumName<E>, N>& entries() const { return entries_; }

 private:
  std::array<EnumName<E>, N> entries_;
};

// Builds a table from a braced list: MakeEnumNames<Phase>({{Phase::kPrefill, "prefill"}, …}).
template <typename E, size_t N>
constexpr EnumNames<E, N> MakeEnumNames(const EnumName<E> (&entries)[N]) {
  std::array<EnumName<E>, N> a{};
  for (size_t i = 0; i < N; ++i) a[i] = entries[i];
  return EnumNames<E, N>(a);
}

}  // namespace shardscope

#endif  // SHARDSCOPE_CORE_ENUM_NAMES_H_
