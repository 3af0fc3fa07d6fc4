#include "importers/xspace_importer.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>

#include <climits>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "importers/file_bytes.h"

namespace shardscope::importers {
namespace {

namespace pbio = google::protobuf::io;

// Protobuf wire types used by xplane.proto.
constexpr int kVarint = 0;
constexpr int kFixed64 = 1;
constexpr int kLen = 2;
constexpr int kFixed32 = 5;

// An XStat before its metadata is known: `field` is the number of its oneof value
// (2 double, 3 uint64, 4 int64, 5 str, 6 bytes, 7 ref), `bits` the numeric value.
struct RawStat {
  int64_t metadata_id = 0;
  int field = 0;
  uint64_t bits = 0;
  std::string str;
};

struct RawEvent {
  int64_t metadata_id = 0;
  int64_t offset_ps = 0;
  int64_t duration_ps = 0;
  bool aggregated = false;  // num_occurrences instead of a time
  std::vector<RawStat> stats;
};

struct RawLine {
  std::string name;
  std::string display_name;
  int64_t timestamp_ns = 0;
  std::vector<RawEvent> events;
};

struct EventMetadata {
  std::string name;
  std::string display_name;
  std::vector<RawStat> stats;
};

// An XPlane as stored: its lines come before the metadata they refer to.
struct RawPlane {
  std::string name;
  std::vector<RawLine> lines;
  std::unordered_map<int64_t, EventMetadata> event_metadata;
  std::unordered_map<int64_t, std::string> stat_names;
  std::vector<RawStat> stats;
};

// Decodes the messages of xplane.proto from a buffer, field by field.
class Decoder {
 public:
  Decoder(std::string_view data, const std::string& name)
      : name_(name),
        size_(static_cast<int64_t>(data.size())),
        in_(reinterpret_cast<const uint8_t*>(data.data()), static_cast<int>(data.size())) {
    in_.SetTotalBytesLimit(INT_MAX);
  }

  Status Space(std::vector<RawPlane>* planes) {
    while (uint32_t tag = in_.ReadTag()) {
      if (Field(tag) == 1) {
        RETURN_IF_ERROR(Message(tag, "XPlane", [&] { return Plane(&planes->emplace_back()); }));
      } else {
        RETURN_IF_ERROR(Skip(tag, "XSpace"));
      }
    }
    return End("XSpace");
  }

 private:
  static int Field(uint32_t tag) { return static_cast<int>(tag >> 3); }
  static int Wire(uint32_t tag) { return static_cast<int>(tag & 7); }

  Status Corrupt(std::string_view what) const {
    return DataLoss("{}: truncated or corrupt XSpace protobuf at byte {}: {}", name_,
                    in_.CurrentPosition(), what);
  }

  Status WireIs(uint32_t tag, int wire, std::string_view field) const {
    if (Wire(tag) == wire) return Status::Ok();
    return Corrupt(fmt::format("{} has wire type {}, expected {}", field, Wire(tag), wire));
  }

  // After a message's fields: the last tag read must have been its end, not garbage.
  Status End(std::string_view message) {
    if (in_.ConsumedEntireMessage()) return Status::Ok();
    return Corrupt(fmt::format("invalid field tag in {}", message));
  }

  Status Skip(uint32_t tag, std::string_view message) {
    uint64_t v = 0;
    uint32_t len = 0;
    switch (Wire(tag)) {
      case kVarint:
        if (in_.ReadVarint64(&v)) return Status::Ok();
        break;
      case kFixed64:
        if (in_.ReadLittleEndian64(&v)) return Status::Ok();
        break;
      case kLen:
        if (in_.ReadVarint32(&len) && len <= Remaining() && in_.Skip(static_cast<int>(len))) {
          return Status::Ok();
        }
        break;
      case kFixed32:
        if (in_.Skip(4)) return Status::Ok();
        break;
      default:
        return Corrupt(
            fmt::format("field {} of {} has wire type {}, which xplane.proto never "
                        "uses (not an XSpace?)",
                        Field(tag), message, Wire(tag)));
    }
    return Corrupt(fmt::format("field {} of {} ends early", Field(tag), message));
  }

  uint32_t Remaining() const {
    return static_cast<uint32_t>(std::min<int64_t>(size_ - in_.CurrentPosition(), UINT32_MAX));
  }

  // A length-delimited sub-message, read by `body` within its limit.
  Status Message(uint32_t tag, std::string_view what, const std::function<Status()>& body) {
    RETURN_IF_ERROR(WireIs(tag, kLen, what));
    uint32_t len = 0;
    if (!in_.ReadVarint32(&len)) return Corrupt(fmt::format("the length of {} ends early", what));
    if (len > Remaining()) {
      return Corrupt(fmt::format("{} of {} bytes, but only {} remain", what, len, Remaining()));
    }
    pbio::CodedInputStream::Limit limit = in_.PushLimit(static_cast<int>(len));
    RETURN_IF_ERROR(body());
    RETURN_IF_ERROR(End(what));
    in_.PopLimit(limit);
    return Status::Ok();
  }

  Status Int(uint32_t tag, int64_t* out, std::string_view field) {
    RETURN_IF_ERROR(WireIs(tag, kVarint, field));
    uint64_t v = 0;
    if (!in_.ReadVarint64(&v)) return Corrupt(fmt::format("{} ends early", field));
    *out = static_cast<int64_t>(v);
    return Status::Ok();
  }

  Status String(uint32_t tag, std::string* out, std::string_view field) {
    RETURN_IF_ERROR(WireIs(tag, kLen, field));
    uint32_t len = 0;
    if (!in_.ReadVarint32(&len) || len > Remaining() ||
        !in_.ReadString(out, static_cast<int>(len))) {
      return Corrupt(fmt::format("{} ends early", field));
    }
    return Status::Ok();
  }

  Status Plane(RawPlane* plane) {
    while (uint32_t tag = in_.ReadTag()) {
      switch (Field(tag)) {
        case 2:
          RETURN_IF_ERROR(String(tag, &plane->name, "XPlane.name"));
          break;
        case 3:
          RETURN_IF_ERROR(
              Message(tag, "XLine", [&] { return Line(&plane->lines.emplace_back()); }));
          break;
        case 4:
          RETURN_IF_ERROR(Message(tag, "XPlane.event_metadata entry",
                                  [&] { return EventMetadataEntry(plane); }));
          break;
        case 5:
          RETURN_IF_ERROR(
              Message(tag, "XPlane.stat_metadata entry", [&] { return StatMetadataEntry(plane); }));
          break;
        case 6:
          RETURN_IF_ERROR(
              Message(tag, "XStat", [&] { return Stat(&plane->stats.emplace_back()); }));
          break;
        default:
          RETURN_IF_ERROR(Skip(tag, "XPlane"));
      }
    }
    return Status::Ok();
  }

  Status Line(RawLine* line) {
    while (uint32_t tag = in_.ReadTag()) {
      switch (Field(tag)) {
        case 2:
          RETURN_IF_ERROR(String(tag, &line->name, "XLine.name"));
          break;
        case 3:
          RETURN_IF_ERROR(Int(tag, &line->timestamp_ns, "XLine.timestamp_ns"));
          break;
        case 4:
          RETURN_IF_ERROR(
              Message(tag, "XEvent", [&] { return Event(&line->events.emplace_back()); }));
          break;
        case 11:
          RETURN_IF_ERROR(String(tag, &line->display_name, "XLine.display_name"));
          break;
        default:
          RETURN_IF_ERROR(Skip(tag, "XLine"));
      }
    }
    return Status::Ok();
  }

  Status Event(RawEvent* event) {
    int64_t occurrences = 0;
    while (uint32_t tag = in_.ReadTag()) {
      switch (Field(tag)) {
        case 1:
          RETURN_IF_ERROR(Int(tag, &event->metadata_id, "XEvent.metadata_id"));
          break;
        case 2:
          RETURN_IF_ERROR(Int(tag, &event->offset_ps, "XEvent.offset_ps"));
          break;
        case 3:
          RETURN_IF_ERROR(Int(tag, &event->duration_ps, "XEvent.duration_ps"));
          break;
        case 4:
          RETURN_IF_ERROR(
              Message(tag, "XStat", [&] { return Stat(&event->stats.emplace_back()); }));
          break;
        case 5:
          RETURN_IF_ERROR(Int(tag, &occurrences, "XEvent.num_occurrences"));
          event->aggregated = true;
          break;
        default:
          RETURN_IF_ERROR(Skip(tag, "XEvent"));
      }
    }
    return Status::Ok();
  }

  Status Stat(RawStat* stat) {
    while (uint32_t tag = in_.ReadTag()) {
      const int field = Field(tag);
      if (field == 1) {
        RETURN_IF_ERROR(Int(tag, &stat->metadata_id, "XStat.metadata_id"));
      } else if (field == 2) {
        RETURN_IF_ERROR(WireIs(tag, kFixed64, "XStat.double_value"));
        if (!in_.ReadLittleEndian64(&stat->bits)) return Corrupt("XStat.double_value ends early");
        stat->field = field;
      } else if (field == 3 || field == 4 || field == 7) {
        int64_t v = 0;
        RETURN_IF_ERROR(Int(tag, &v, "XStat value"));
        stat->bits = static_cast<uint64_t>(v);
        stat->field = field;
      } else if (field == 5 || field == 6) {
        RETURN_IF_ERROR(String(tag, &stat->str, "XStat value"));
        stat->field = field;
      } else {
        RETURN_IF_ERROR(Skip(tag, "XStat"));
      }
    }
    return Status::Ok();
  }

  Status EventMetadataEntry(RawPlane* plane) {
    int64_t key = 0;
    EventMetadata meta;
    while (uint32_t tag = in_.ReadTag()) {
      if (Field(tag) == 1) {
        RETURN_IF_ERROR(Int(tag, &key, "event_metadata key"));
      } else if (Field(tag) == 2) {
        RETURN_IF_ERROR(Message(tag, "XEventMetadata", [&] {
          while (uint32_t t = in_.ReadTag()) {
            switch (Field(t)) {
              case 2:
                RETURN_IF_ERROR(String(t, &meta.name, "XEventMetadata.name"));
                break;
              case 4:
                RETURN_IF_ERROR(String(t, &meta.display_name, "XEventMetadata.display_name"));
                break;
              case 5:
                RETURN_IF_ERROR(
                    Message(t, "XStat", [&] { return Stat(&meta.stats.emplace_back()); }));
                break;
              default:
                RETURN_IF_ERROR(Skip(t, "XEventMetadata"));
            }
          }
          return Status::Ok();
        }));
      } else {
        RETURN_IF_ERROR(Skip(tag, "event_metadata entry"));
      }
    }
    plane->event_metadata[key] = std::move(meta);
    return Status::Ok();
  }

  Status StatMetadataEntry(RawPlane* plane) {
    int64_t key = 0;
    std::string stat_name;
    while (uint32_t tag = in_.ReadTag()) {
      if (Field(tag) == 1) {
        RETURN_IF_ERROR(Int(tag, &key, "stat_metadata key"));
      } else if (Field(tag) == 2) {
        RETURN_IF_ERROR(Message(tag, "XStatMetadata", [&] {
          while (uint32_t t = in_.ReadTag()) {
            if (Field(t) == 2) {
              RETURN_IF_ERROR(String(t, &stat_name, "XStatMetadata.name"));
            } else {
              RETURN_IF_ERROR(Skip(t, "XStatMetadata"));
            }
          }
          return Status::Ok();
        }));
      } else {
        RETURN_IF_ERROR(Skip(tag, "stat_metadata entry"));
      }
    }
    plane->stat_names[key] = std::move(stat_name);
    return Status::Ok();
  }

  const std::string& name_;
  const int64_t size_;
  pbio::CodedInputStream in_;
};

// Appends `raw` as (name, text) to `out`, replacing a stat of the same name. Bytes values
// (serialized protos) are not kept.
void AddStats(const std::vector<RawStat>& raw, const RawPlane& plane, XlaStats* out) {
  for (const RawStat& s : raw) {
    auto it = plane.stat_names.find(s.metadata_id);
    if (it == plane.stat_names.end() || s.field == 6 || s.field == 0) continue;
    std::string value;
    switch (s.field) {
      case 2: {
        double d = 0;
        std::memcpy(&d, &s.bits, sizeof d);
        value = fmt::format("{}", d);
        break;
      }
      case 3:
        value = std::to_string(s.bits);
        break;
      case 4:
        value = std::to_string(static_cast<int64_t>(s.bits));
        break;
      case 5:
        value = s.str;
        break;
      case 7: {
        auto ref = plane.stat_names.find(static_cast<int64_t>(s.bits));
        if (ref != plane.stat_names.end()) value = ref->second;
        break;
      }
    }
    bool replaced = false;
    for (auto& [name, v] : *out) {
      if (name == it->second) {
        v = value;
        replaced = true;
      }
    }
    if (!replaced) out->emplace_back(it->second, std::move(value));
  }
}

// A device plane with names and stats resolved.
XlaDevice ToDevice(const RawPlane& plane, int32_t ordinal, trace::ReadStats* stats) {
  XlaDevice device;
  device.ordinal = ordinal;
  device.name = plane.name;
  AddStats(plane.stats, plane, &device.stats);
  for (const RawLine& raw : plane.lines) {
    XlaLine& line = device.lines.emplace_back();
    line.name = raw.name.empty() ? raw.display_name : raw.name;
    for (const RawEvent& re : raw.events) {
      if (re.aggregated) {
        stats->Count(trace::Stat::kXspaceAggregated);
        continue;
      }
      auto meta = plane.event_metadata.find(re.metadata_id);
      if (meta == plane.event_metadata.end()) {
        stats->Count(trace::Stat::kXspaceNoMetadata);
        continue;
      }
      XlaEvent& e = line.events.emplace_back();
      e.base_ns = raw.timestamp_ns;
      e.offset_ps = re.offset_ps;
      e.duration_ps = re.duration_ps;
      if (meta->second.display_name.empty()) {
        e.name = meta->second.name;
      } else {
        e.name = meta->second.display_name;
        e.long_name = meta->second.name;
      }
      AddStats(meta->second.stats, plane, &e.stats);
      AddStats(re.stats, plane, &e.stats);
    }
  }
  return device;
}

}  // namespace

StatusOr<std::vector<XlaDevice>> DecodeXspace(std::string_view data, const std::string& name,
                                              trace::ReadStats* stats) {
  if (data.empty()) return InvalidArgument("{}: empty file", name);
  if (data.size() > static_cast<size_t>(INT_MAX)) {
    return InvalidArgument("{}: {} bytes: XSpace files over 2 GiB are not supported", name,
                           data.size());
  }
  std::vector<RawPlane> planes;
  RETURN_IF_ERROR(Decoder(data, name).Space(&planes));
  stats->bytes += static_cast<int64_t>(data.size());
  std::vector<XlaDevice> devices;
  std::string others;
  for (const RawPlane& plane : planes) {
    int64_t events = 0;
    for (const RawLine& line : plane.lines) events += static_cast<int64_t>(line.events.size());
    stats->events += events;
    if (std::optional<int32_t> ordinal = XlaDeviceOrdinal(plane.name)) {
      devices.push_back(ToDevice(plane, *ordinal, stats));
    } else {
      if (events > 0) stats->CountN(trace::Stat::kXlaPlane, events, plane.name);
      others += fmt::format("{}\"{}\"", others.empty() ? "" : ", ", plane.name);
    }
  }
  if (devices.empty()) {
    return InvalidArgument("{}: no /device:TPU:N or /device:GPU:N plane in the XSpace (planes: {})",
                           name, others.empty() ? "none" : others);
  }
  return devices;
}

bool XspaceImporterBuilt() { return true; }

StatusOr<trace::ReadStats> ImportXspace(const std::string& path, trace::TraceSink* sink) {
  ASSIGN_OR_RETURN(std::string data, ReadFileBytes(path));
  trace::ReadStats stats;
  ASSIGN_OR_RETURN(std::vector<XlaDevice> devices, DecodeXspace(data, path, &stats));
  EmitXlaDevices(devices, sink, &stats);
  return stats;
}

}  // namespace shardscope::importers
