#include "importers/xla_json_importer.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>

#include "importers/file_bytes.h"
#include "trace/json_value.h"

namespace shardscope::importers {
namespace {

namespace od = simdjson::ondemand;

// An X event before its process and thread are known to be a device line.
struct RawEvent {
  int64_t pid = 0;
  int64_t tid = 0;
  XlaEvent event;
};

// An integer pid/tid (trace/json_value.h), also when written as a string.
bool GetId(od::value v, int64_t* out) {
  od::json_type type;
  if (v.type().get(type)) return false;
  if (type == od::json_type::number) return trace::GetJsonInt(v, out);
  std::string_view s;
  return type == od::json_type::string && !v.get_string().get(s) && trace::ParseJsonIntText(s, out);
}

// A JSON number in microseconds to ns + ps.
bool GetMicros(od::value v, int64_t* ns, int64_t* ps) {
  od::json_type type;
  if (v.type().get(type) || type != od::json_type::number) return false;
  return ParseMicrosToNsPs(trace::TrimJsonSpace(v.raw_json_token()), ns, ps);
}

class Decoder {
 public:
  Decoder(const std::string& name, trace::ReadStats* stats) : name_(name), stats_(stats) {}

  StatusOr<std::vector<XlaDevice>> Decode(std::string_view data) {
    if (data.empty()) return InvalidArgument("{}: empty file", name_);
    simdjson::padded_string json(data);
    od::parser parser;
    od::document doc;
    od::json_type type;
    if (auto err = parser.iterate(json).get(doc)) return NotJson(err);
    if (auto err = doc.type().get(type)) return NotJson(err);
    bool found = false;
    if (type == od::json_type::array) {
      od::array events;
      if (auto err = doc.get_array().get(events)) return NotJson(err);
      RETURN_IF_ERROR(Events(events));
      found = true;
    } else if (type == od::json_type::object) {
      od::object top;
      if (auto err = doc.get_object().get(top)) return NotJson(err);
      for (auto field : top) {
        std::string_view key;
        if (field.unescaped_key().get(key)) return Truncated("a top-level key");
        if (key != "traceEvents") continue;
        od::array events;
        if (field.value().get_array().get(events)) {
          return InvalidArgument("{}: \"traceEvents\" is not an array", name_);
        }
        RETURN_IF_ERROR(Events(events));
        found = true;
      }
    } else {
      return InvalidArgument("{}: not a JSON trace (neither an object nor an array)", name_);
    }
    if (!found) return InvalidArgument("{}: no \"traceEvents\"", name_);
    stats_->bytes += static_cast<int64_t>(data.size());
    return Devices();
  }

 private:
  // An error of the whole document: truncated (DataLoss) or not JSON at all.
  Status NotJson(simdjson::error_code err) const {
    if (err == simdjson::UNCLOSED_STRING || err == simdjson::INCOMPLETE_ARRAY_OR_OBJECT) {
      return DataLoss("{}: truncated JSON ({})", name_, simdjson::error_message(err));
    }
    return InvalidArgument("{}: not JSON ({})", name_, simdjson::error_message(err));
  }

  Status Truncated(std::string_view where) const {
    return DataLoss("{}: truncated or invalid JSON in {}", name_, where);
  }

  void Skip(trace::Stat stat) { stats_->Skip(stat, {trace::EventPlace::kEvent, index_}); }

  Status Events(od::array events) {
    for (auto element : events) {
      od::value v;
      od::json_type type;
      if (element.get(v) || v.type().get(type)) return Truncated(fmt::format("event #{}", index_));
      if (type != od::json_type::object) {
        ++stats_->events;
        Skip(trace::Stat::kNotAnObject);
        ++index_;
        continue;
      }
      od::object event;
      if (v.get_object().get(event)) return Truncated(fmt::format("event #{}", index_));
      RETURN_IF_ERROR(Event(event));
      ++index_;
    }
    return Status::Ok();
  }

  Status Event(od::object event) {
    std::string ph, meta_name, arg_name;
    RawEvent raw;
    bool any = false, has_pid = false, has_ts = false, has_dur = false, bad_pid = false;
    bool bad_ts = false, bad_dur = false;
    for (auto field : event) {
      any = true;
      std::string_view key;
      od::value value;
      if (field.unescaped_key().get(key) || field.value().get(value)) {
        return Truncated(fmt::format("event #{}", index_));
      }
      if (key == "ph") {
        if (!trace::GetJsonText(value, &ph)) return Truncated(fmt::format("event #{}", index_));
      } else if (key == "pid") {
        has_pid = GetId(value, &raw.pid);
        bad_pid = !has_pid;
      } else if (key == "tid") {
        if (!GetId(value, &raw.tid)) bad_pid = true;
      } else if (key == "ts") {
        has_ts = GetMicros(value, &raw.event.base_ns, &raw.event.offset_ps);
        bad_ts = !has_ts;
      } else if (key == "dur") {
        int64_t ns = 0, ps = 0;
        has_dur = GetMicros(value, &ns, &ps);
        bad_dur = !has_dur;
        raw.event.duration_ps = ns * 1000 + ps;
      } else if (key == "name") {
        if (!trace::GetJsonText(value, &raw.event.name))
          return Truncated(fmt::format("event #{}", index_));
      } else if (key == "args") {
        od::object args;
        if (value.get_object().get(args)) continue;  // not an object: no args
        for (auto arg : args) {
          std::string_view arg_key;
          od::value arg_value;
          std::string text;
          if (arg.unescaped_key().get(arg_key) || arg.value().get(arg_value) ||
              !trace::GetJsonText(arg_value, &text)) {
            return Truncated(fmt::format("the args of event #{}", index_));
          }
          if (arg_key == "long_name") {
            raw.event.long_name = std::move(text);
          } else if (arg_key == "name") {
            arg_name = text;
            raw.event.stats.emplace_back(std::string(arg_key), std::move(text));
          } else {
            raw.event.stats.emplace_back(std::string(arg_key), std::move(text));
          }
        }
      }
    }
    if (!any) return Status::Ok();  // the trailing "{}" xprof writes
    ++stats_->events;
    if (ph == "M") {
      if (raw.event.name == "process_name" && has_pid) {
        process_names_[raw.pid] = arg_name;
      } else if (raw.event.name == "thread_name" && has_pid) {
        thread_names_[{raw.pid, raw.tid}] = arg_name;
      } else {
        stats_->Count(trace::Stat::kXlaMetadata, raw.event.name);
      }
      return Status::Ok();
    }
    if (ph != "X") {
      stats_->Count(trace::Stat::kForeignPh, ph);
      return Status::Ok();
    }
    if (!has_pid || bad_pid) {
      Skip(trace::Stat::kXlaIdNotInteger);
    } else if (!has_ts || bad_ts) {
      Skip(trace::Stat::kXlaTsNotNumber);
    } else if (!has_dur || bad_dur) {
      Skip(trace::Stat::kXlaDurNotNumber);
    } else if (raw.event.duration_ps < 0) {
      Skip(trace::Stat::kXlaNegativeDur);
    } else {
      events_.push_back(std::move(raw));
    }
    return Status::Ok();
  }

  // Groups the X events of device processes into devices and lines, in file order.
  StatusOr<std::vector<XlaDevice>> Devices() {
    std::vector<XlaDevice> devices;
    std::map<int64_t, size_t> device_of_pid;
    for (const auto& [pid, pname] : process_names_) {
      if (std::optional<int32_t> ordinal = XlaDeviceOrdinal(pname)) {
        device_of_pid[pid] = devices.size();
        XlaDevice& d = devices.emplace_back();
        d.ordinal = *ordinal;
        d.name = pname;
      }
    }
    if (devices.empty()) {
      return InvalidArgument("{}: no process named /device:TPU:N or /device:GPU:N", name_);
    }
    std::map<std::pair<int64_t, int64_t>, size_t> line_of_thread;
    for (RawEvent& raw : events_) {
      auto d = device_of_pid.find(raw.pid);
      if (d == device_of_pid.end()) {
        auto p = process_names_.find(raw.pid);
        if (p == process_names_.end()) {
          stats_->Count(trace::Stat::kXlaUnnamedProcess);
        } else {
          stats_->Count(trace::Stat::kXlaProcess, p->second);
        }
        continue;
      }
      XlaDevice& device = devices[d->second];
      auto [it, inserted] = line_of_thread.emplace(std::pair{raw.pid, raw.tid}, 0);
      if (inserted) {
        it->second = device.lines.size();
        auto t = thread_names_.find({raw.pid, raw.tid});
        device.lines.emplace_back().name =
            t != thread_names_.end() ? t->second : fmt::format("tid {}", raw.tid);
      }
      device.lines[it->second].events.push_back(std::move(raw.event));
    }
    return devices;
  }

  const std::string& name_;
  trace::ReadStats* const stats_;
  int64_t index_ = 0;
  std::map<int64_t, std::string> process_names_;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names_;
  std::vector<RawEvent> events_;
};

}  // namespace

bool ParseMicrosToNsPs(std::string_view t, int64_t* ns, int64_t* ps) {
  if (t.find_first_of("eE") != std::string_view::npos) {  // exponent: through double
    if (t.size() > 64 || t.find_first_not_of("0123456789+-.eE") != t.npos) return false;
    std::string copy(t);
    char* end = nullptr;
    double d = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size() || !std::isfinite(d) || std::fabs(d) > 9e15) {
      return false;
    }
    double whole_ns = std::floor(d * 1000.0);
    *ns = static_cast<int64_t>(whole_ns);
    *ps = std::min<int64_t>(999, std::llround((d * 1000.0 - whole_ns) * 1000.0));
    return true;
  }
  const bool neg = !t.empty() && t.front() == '-';
  std::string_view digits = neg ? t.substr(1) : t;
  const size_t dot = digits.find('.');
  std::string_view whole = digits.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? "" : digits.substr(dot + 1);
  auto all_digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (whole.empty() || whole.size() > 16 || !all_digits(whole) || !all_digits(frac) ||
      (dot != std::string_view::npos && frac.empty())) {
    return false;
  }
  int64_t w = 0, f = 0;  // f: the first six decimals, in ps
  for (char c : whole) w = w * 10 + (c - '0');
  if (w > 9'000'000'000'000'000) return false;  // beyond int64 ns
  for (size_t i = 0; i < 6; ++i) f = f * 10 + (i < frac.size() ? frac[i] - '0' : 0);
  if (frac.size() > 6 && frac[6] >= '5') ++f;  // round to the ps
  const int64_t total_ns = w * 1000 + f / 1000;
  const int64_t rest_ps = f % 1000;
  *ns = neg ? -total_ns - (rest_ps > 0) : total_ns;
  *ps = neg && rest_ps > 0 ? 1000 - rest_ps : rest_ps;
  return true;
}

StatusOr<std::vector<XlaDevice>> DecodeXlaJson(std::string_view data, const std::string& name,
                                               trace::ReadStats* stats) {
  return Decoder(name, stats).Decode(data);
}

StatusOr<trace::ReadStats> ImportXlaJson(const std::string& path, trace::TraceSink* sink) {
  ASSIGN_OR_RETURN(std::string data, ReadFileBytes(path));
  trace::ReadStats stats;
  ASSIGN_OR_RETURN(std::vector<XlaDevice> devices, DecodeXlaJson(data, path, &stats));
  EmitXlaDevices(devices, sink, &stats);
  return stats;
}

}  // namespace shardscope::importers
