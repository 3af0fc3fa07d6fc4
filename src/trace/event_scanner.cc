#include "trace/event_scanner.h"

#include <array>
#include <cstring>

namespace shardscope::trace {
namespace {

// Bytes that matter when finding the end of a value: 1 = opens, 2 = closes, 3 = quote.
constexpr std::array<uint8_t, 256> MakeClassTable() {
  std::array<uint8_t, 256> t{};
  t['{'] = 1;
  t['['] = 1;
  t['}'] = 2;
  t[']'] = 2;
  t['"'] = 3;
  return t;
}
constexpr std::array<uint8_t, 256> kClass = MakeClassTable();

bool IsSpace(int c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// A scalar ends at a delimiter or whitespace.
bool EndsScalar(char c) { return c == ',' || c == ']' || c == '}' || IsSpace(c); }

std::string Printable(int c) {
  if (c < 0) return "end of file";
  if (c >= 0x20 && c < 0x7f) return fmt::format("'{}'", static_cast<char>(c));
  return fmt::format("byte 0x{:02x}", c);
}

constexpr size_t kMaxTopLevelValue = 64 << 20;  // otherData beyond this is skipped

}  // namespace

EventScanner::EventScanner(ByteSource* source, std::string name, size_t chunk_bytes)
    : source_(source), name_(std::move(name)), chunk_bytes_(std::max<size_t>(chunk_bytes, 64)) {
  buf_.resize(chunk_bytes_ + kScannerPadding);
}

StatusOr<bool> EventScanner::Refill(size_t keep) {
  if (eof_) return false;
  size_t kept = end_ - keep;
  if (keep > 0) {
    std::memmove(buf_.data(), buf_.data() + keep, kept);
    base_ += static_cast<int64_t>(keep);
    pos_ -= keep;
  }
  end_ = kept;
  if (buf_.size() - kScannerPadding - end_ < chunk_bytes_ / 2) {
    buf_.resize(2 * (buf_.size() - kScannerPadding) + kScannerPadding);  // a huge event
  }
  size_t room = buf_.size() - kScannerPadding - end_;
  ASSIGN_OR_RETURN(size_t n, source_->Read(buf_.data() + end_, room));
  if (n == 0) {
    eof_ = true;
    return false;
  }
  end_ += n;
  std::memset(buf_.data() + end_, 0, kScannerPadding);
  return true;
}

StatusOr<int> EventScanner::PeekNonSpace() {
  while (true) {
    while (pos_ < end_ && IsSpace(buf_[pos_])) ++pos_;
    if (pos_ < end_) return static_cast<unsigned char>(buf_[pos_]);
    ASSIGN_OR_RETURN(bool more, Refill(pos_));
    if (!more) return -1;
  }
}

EventScanner::Scan EventScanner::ScanValue(size_t start, size_t* end) const {
  const char* const data = buf_.data();
  const char* p = data + start;
  const char* const e = data + end_;
  char first = *p;
  if (first == '"') {
    ++p;
    while (p < e) {
      char c = *p++;
      if (c == '\\') {
        ++p;
      } else if (c == '"') {
        *end = static_cast<size_t>(p - data);
        return Scan::kComplete;
      }
    }
    return Scan::kNeedMore;
  }
  if (kClass[static_cast<unsigned char>(first)] != 1) {  // number, true, false, null, garbage
    while (p < e && !EndsScalar(*p)) ++p;
    if (p == e) return Scan::kNeedMore;
    *end = static_cast<size_t>(p - data);
    return p == data + start ? Scan::kError : Scan::kComplete;
  }
  int depth = 0;
  while (p < e) {
    uint8_t cls = kClass[static_cast<unsigned char>(*p++)];
    if (cls == 0) continue;
    if (cls == 1) {
      ++depth;
    } else if (cls == 2) {
      if (--depth == 0) {
        *end = static_cast<size_t>(p - data);
        return Scan::kComplete;
      }
    } else {  // a string: skip to its closing quote
      while (true) {
        while (p < e && *p != '"' && *p != '\\') ++p;
        if (p >= e) return Scan::kNeedMore;
        if (*p == '\\') {
          p += 2;
          continue;
        }
        ++p;
        break;
      }
    }
  }
  return Scan::kNeedMore;
}

Status EventScanner::TakeValue(size_t* start, size_t* end, std::string_view what) {
  while (true) {
    Scan s = ScanValue(pos_, end);
    if (s == Scan::kComplete) {
      *start = pos_;
      pos_ = *end;
      return Status::Ok();
    }
    if (s == Scan::kError) {
      return InvalidArgument("{}: not a valid JSON trace: unexpected {} at byte {}", name_,
                             Printable(static_cast<unsigned char>(buf_[pos_])), Offset(pos_));
    }
    int64_t value_offset = Offset(pos_);
    ASSIGN_OR_RETURN(bool more, Refill(pos_));
    if (!more) {
      return DataLoss("{}: truncated at byte {}: {} starting at byte {} is incomplete", name_,
                      Offset(end_), what, value_offset);
    }
  }
}

Status EventScanner::Unexpected(std::string_view expected, int c) const {
  if (c < 0) {
    return DataLoss("{}: truncated at byte {}: expected {}", name_, Offset(end_), expected);
  }
  return InvalidArgument("{}: not a valid JSON trace: expected {} at byte {}, found {}", name_,
                         expected, Offset(pos_), Printable(c));
}

StatusOr<bool> EventScanner::Next(std::string_view* event, int64_t* offset, size_t* capacity) {
  while (true) {
    switch (state_) {
      case State::kStart: {
        ASSIGN_OR_RETURN(int c, PeekNonSpace());
        if (c == 0xEF && end_ - pos_ >= 3 && std::memcmp(&buf_[pos_], "\xEF\xBB\xBF", 3) == 0) {
          pos_ += 3;  // UTF-8 byte order mark
          continue;
        }
        if (c < 0) {
          return InvalidArgument("{}: empty file{}", name_,
                                 Offset(end_) > 0 ? " (only whitespace)" : "");
        }
        if (c == '{') {
          state_ = State::kObjectKey;
        } else if (c == '[') {
          array_form_ = true;
          saw_events_ = true;
          state_ = State::kArrayElement;
        } else {
          return InvalidArgument("{}: not a JSON trace: expected '{{' or '[' at byte {}, found {}",
                                 name_, Offset(pos_), Printable(c));
        }
        ++pos_;
        break;
      }
      case State::kObjectKey: {
        ASSIGN_OR_RETURN(int c, PeekNonSpace());
        if (c == '}' && !saw_events_ && top_level_.empty()) {
          ++pos_;
          state_ = State::kDone;
          break;
        }
        if (c != '"') return Unexpected("a key string", c);
        size_t start, end;
        RETURN_IF_ERROR(TakeValue(&start, &end, "the key"));
        std::string key(&buf_[start + 1], end - start - 2);
        ASSIGN_OR_RETURN(c, PeekNonSpace());
        if (c != ':') return Unexpected("':'", c);
        ++pos_;
        ASSIGN_OR_RETURN(c, PeekNonSpace());
        if (c < 0) return Unexpected("a value", c);
        if (key == "traceEvents") {
          if (c != '[') return Unexpected("'[' (traceEvents must be an array)", c);
          ++pos_;
          saw_events_ = true;
          state_ = State::kArrayElement;
          break;
        }
        RETURN_IF_ERROR(TakeValue(&start, &end, fmt::format("the value of \"{}\"", key)));
        if ((key == "otherData" || key == "metadata") && end - start <= kMaxTopLevelValue) {
          top_level_[key] = std::string(&buf_[start], end - start);
        }
        state_ = State::kAfterObjectValue;
        break;
      }
      case State::kAfterObjectValue: {
        ASSIGN_OR_RETURN(int c, PeekNonSpace());
        if (c == ',') {
          ++pos_;
          state_ = State::kObjectKey;
        } else if (c == '}') {
          ++pos_;
          state_ = State::kDone;
        } else {
          return Unexpected("',' or '}'", c);
        }
        break;
      }
      case State::kArrayElement: {
        ASSIGN_OR_RETURN(int c, PeekNonSpace());
        if (c == ']') {  // empty array, or a trailing comma before ']'
          ++pos_;
          state_ = array_form_ ? State::kDone : State::kAfterObjectValue;
          break;
        }
        if (c < 0) {
          if (array_form_) {
            unclosed_array_ = true;
            state_ = State::kDone;
            break;
          }
          return Unexpected("an event or ']'", c);
        }
        size_t start, end;
        RETURN_IF_ERROR(TakeValue(&start, &end, "the event"));
        state_ = State::kAfterElement;
        *event = std::string_view(&buf_[start], end - start);
        *offset = Offset(start);
        *capacity = buf_.size() - start;
        return true;
      }
      case State::kAfterElement: {
        ASSIGN_OR_RETURN(int c, PeekNonSpace());
        if (c == ',') {
          ++pos_;
          state_ = State::kArrayElement;
        } else if (c == ']') {
          ++pos_;
          state_ = array_form_ ? State::kDone : State::kAfterObjectValue;
        } else if (c < 0 && array_form_) {
          unclosed_array_ = true;
          state_ = State::kDone;
        } else {
          return Unexpected("',' or ']' after an event", c);
        }
        break;
      }
      case State::kDone: {
        if (!saw_events_) {
          return InvalidArgument("{}: not a trace: the JSON object has no \"traceEvents\" array",
                                 name_);
        }
        ASSIGN_OR_RETURN(int c, PeekNonSpace());
        if (c >= 0) return Unexpected("the end of the file", c);
        return false;
      }
    }
  }
}

}  // namespace shardscope::trace
