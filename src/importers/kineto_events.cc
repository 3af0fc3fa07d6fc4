#include "importers/kineto_events.h"

#include <algorithm>
#include <iterator>

namespace shardscope::importers::kineto {
namespace {

template <typename T>
void MoveAppend(std::vector<T>* from, std::vector<T>* to) {
  if (to->empty()) {
    *to = std::move(*from);
    return;
  }
  to->insert(to->end(), std::make_move_iterator(from->begin()),
             std::make_move_iterator(from->end()));
}

}  // namespace

void AppendKinetoEvents(KinetoEvents part, KinetoEvents* total,
                        std::unordered_map<std::string, int32_t>* name_index) {
  std::vector<int32_t> name_ids(part.names.size());
  for (size_t i = 0; i < part.names.size(); ++i) {
    auto [it, added] =
        name_index->emplace(part.names[i], static_cast<int32_t>(total->names.size()));
    if (added) total->names.push_back(std::move(part.names[i]));
    name_ids[i] = it->second;
  }
  const int32_t args_offset = static_cast<int32_t>(total->comm_args.size());
  for (GpuOp& op : part.ops) {
    op.name = name_ids[op.name];
    if (op.args >= 0) op.args += args_offset;
  }
  for (HostComm& hc : part.host_comms) {
    if (hc.args >= 0) hc.args += args_offset;
  }
  MoveAppend(&part.ops, &total->ops);
  MoveAppend(&part.comm_args, &total->comm_args);
  MoveAppend(&part.runtime, &total->runtime);
  MoveAppend(&part.host_comms, &total->host_comms);
  MoveAppend(&part.host_gemms, &total->host_gemms);
  MoveAppend(&part.steps, &total->steps);
  for (auto& [key, name] : part.thread_names) total->thread_names[key] = std::move(name);
  // Counted by (type, value) when delivered: the order of the entries does not matter.
  for (IgnoredCount& c : part.ignored) {
    auto same = [&](const IgnoredCount& t) { return t.type == c.type && t.value == c.value; };
    auto it = std::find_if(total->ignored.begin(), total->ignored.end(), same);
    if (it != total->ignored.end()) {
      it->count += c.count;
    } else {
      total->ignored.push_back(std::move(c));
    }
  }
}

}  // namespace shardscope::importers::kineto
