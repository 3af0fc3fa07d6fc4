// JsonAt: the value at a path of keys in nested JSON objects (run metadata), or
// null when a level is missing, null or not an object. The callers check the
// value's type themselves.
#ifndef SHARDSCOPE_TRACE_JSON_PATH_H_
#define SHARDSCOPE_TRACE_JSON_PATH_H_

#include <initializer_list>
#include <nlohmann/json.hpp>

namespace shardscope::trace {

inline const nlohmann::json* JsonAt(const nlohmann::json& root,
                                    std::initializer_list<const char*> path) {
  const nlohmann::json* j = &root;
  for (const char* key : path) {
    if (!j->is_object()) return nullptr;
    auto it = j->find(key);
    if (it == j->end() || it->is_null()) return nullptr;
    j = &*it;
  }
  return j;
}

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_JSON_PATH_H_
