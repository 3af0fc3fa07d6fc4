#include "importers/kineto_args.h"

#include <fmt/format.h>

#include "trace/json_value.h"

namespace shardscope::importers::kineto {
namespace {

namespace od = simdjson::ondemand;

// A string, or the raw JSON of an array ("In split size" is either).
bool GetStringOrArray(od::value& v, std::string* out, bool no_escapes) {
  std::string_view s;
  if (trace::GetJsonString(v, &s, no_escapes)) {
    out->assign(s);
    return true;
  }
  od::array arr;
  if (v.get_array().get(arr) == simdjson::SUCCESS && arr.raw_json().get(s) == simdjson::SUCCESS) {
    out->assign(s);
    return true;
  }
  return false;
}

}  // namespace

bool ParseEventArgs(od::value& value, bool is_meta, bool no_escapes, EventArgs* event,
                    CommArgs* comm, std::string* error) {
  auto fail = [&](std::string_view reason) {
    error->assign(reason);
    return false;
  };
  od::object args;
  if (value.get_object().get(args)) return fail("args is not an object");
  for (auto field_result : args) {
    if (field_result.error()) return fail("invalid JSON");
    od::field& field = field_result.value_unsafe();
    const char* k = field.key().raw();
    od::value& v = field.value();
    bool ok = true;
    std::string_view s;
    switch (k[0]) {
      case 'n':  // metadata args
        if (is_meta && KeyIs(k, "name"))
          ok = trace::GetJsonString(v, &event->meta_name, no_escapes);
        break;
      case 'c':
        if (KeyIs(k, "correlation")) ok = trace::GetJsonInt(v, &event->correlation);
        break;
      case 'E':
        if (KeyIs(k, "External id")) ok = trace::GetJsonInt(v, &event->external_id);
        break;
      case 'C':
        if (KeyIs(k, "Collective name")) {
          ok = trace::GetJsonString(v, &s, no_escapes);
          if (ok) comm->collective.assign(s);
          comm->any = true;
        }
        break;
      case 'I':
        if (KeyIs(k, "In msg nelems")) {
          ok = trace::GetJsonInt(v, &comm->in_nelems);
          comm->any = true;
        } else if (KeyIs(k, "In split size")) {
          ok = GetStringOrArray(v, &comm->in_split, no_escapes);
        }
        break;
      case 'O':
        if (KeyIs(k, "Out msg nelems")) {
          ok = trace::GetJsonInt(v, &comm->out_nelems);
          comm->any = true;
        } else if (KeyIs(k, "Out split size")) {
          ok = GetStringOrArray(v, &comm->out_split, no_escapes);
        }
        break;
      case 'G':
        if (KeyIs(k, "Group size")) {
          ok = trace::GetJsonInt(v, &comm->group_size);
        } else if (KeyIs(k, "Global rank start")) {
          ok = trace::GetJsonInt(v, &comm->rank_start);
        } else if (KeyIs(k, "Global rank stride")) {
          ok = trace::GetJsonInt(v, &comm->rank_stride);
        }
        break;
      case 'd':
        if (KeyIs(k, "dtype")) {
          ok = trace::GetJsonString(v, &s, no_escapes);
          if (ok) comm->dtype.assign(s);
        }
        break;
      case 'P':
        if (KeyIs(k, "Process Group Ranks")) {
          ok = GetStringOrArray(v, &comm->pg_ranks, no_escapes);
        } else if (KeyIs(k, "Process Group Name")) {
          ok = trace::GetJsonString(v, &s, no_escapes);
          if (ok) comm->pg_name.assign(s);
        } else if (KeyIs(k, "Process Group Description")) {
          ok = trace::GetJsonString(v, &s, no_escapes);
          if (ok) comm->pg_desc.assign(s);
        }
        break;
      case 'R':
        if (KeyIs(k, "Rank")) ok = trace::GetJsonInt(v, &comm->rank);
        break;
      default:
        break;
    }
    if (!ok) {
      size_t n = 0;
      while (n < 32 && k[n] != '"') ++n;
      return fail(fmt::format("bad value of args.{}", std::string_view(k, n)));
    }
  }
  return true;
}

}  // namespace shardscope::importers::kineto
