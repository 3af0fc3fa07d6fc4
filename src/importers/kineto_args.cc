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

// "Input Dims": [[65536, 384], [], …] — the element count of the first input
// (-1 when it is a scalar or the list is empty), and the dims of the first
// three inputs (a GEMM's operands; an input that is not a plain shape: empty).
bool InputDims(od::value& v, int64_t* out, std::array<std::vector<int64_t>, 3>* shapes) {
  *out = -1;
  od::array inputs;
  if (v.get_array().get(inputs) != simdjson::SUCCESS) return false;
  size_t index = 0;
  for (auto input : inputs) {
    od::array dims;
    if (input.get_array().get(dims) != simdjson::SUCCESS) return false;
    int64_t n = 1;
    bool any = false, odd = false;
    std::vector<int64_t>* shape = index < shapes->size() ? &(*shapes)[index] : nullptr;
    if (shape) shape->clear();
    for (auto d : dims) {  // read to the end, so the parser stays in step
      int64_t x = 0;
      od::value dv;
      if (d.get(dv) != simdjson::SUCCESS) return false;
      // A tensor list ([[…], […]]) or an odd value: not one message, size unknown.
      const bool bad = !trace::GetJsonInt(dv, &x) || x < 0;
      odd = odd || bad || __builtin_mul_overflow(n, x, &n);
      if (shape && !bad) shape->push_back(x);
      any = true;
    }
    if (shape && odd) shape->clear();
    if (index == 0 && any && !odd) *out = n;
    if (++index == shapes->size()) break;  // the operands only
  }
  return true;
}

// "Input type": ["float", "Scalar", …] — the first input's element type.
bool FirstInputType(od::value& v, std::string* out, bool no_escapes) {
  od::array types;
  if (v.get_array().get(types) != simdjson::SUCCESS) return false;
  for (auto t : types) {
    od::value tv;
    std::string_view s;
    if (t.get(tv) != simdjson::SUCCESS || !trace::GetJsonString(tv, &s, no_escapes)) return false;
    out->assign(s);
    return true;
  }
  return true;
}

}  // namespace

bool ParseEventArgs(od::value& value, bool is_meta, bool no_escapes, EventArgs* event,
                    CommArgs* comm, trace::SkipReason* error) {
  od::object args;
  if (value.get_object().get(args)) return error->Set(trace::Stat::kArgsNotObject);
  for (auto field_result : args) {
    if (field_result.error()) return error->Set(trace::Stat::kInvalidJson);
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
        } else if (KeyIs(k, "Input Dims")) {
          ok = InputDims(v, &comm->shape_nelems, &comm->inputs);
          if (comm->shape_nelems > 0) comm->any = true;
        } else if (KeyIs(k, "Input type")) {
          ok = FirstInputType(v, &comm->shape_dtype, no_escapes);
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
      return error->Set(trace::Stat::kBadArgValue, std::string_view(k, n));
    }
  }
  return true;
}

}  // namespace shardscope::importers::kineto
