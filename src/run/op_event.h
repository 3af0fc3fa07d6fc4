// Converts a Program op into the trace model's OpEvent fields, so the
// simulator and the real executors describe the same op identically in their
// traces. Time, phase, step, dtype and the bytes that really moved are the
// caller's to set.
#ifndef SHARDSCOPE_RUN_OP_EVENT_H_
#define SHARDSCOPE_RUN_OP_EVENT_H_

#include <vector>

#include "plan/placement.h"
#include "program/expert_balancer.h"
#include "program/op.h"
#include "trace/trace_event.h"

namespace shardscope {

// Sets e's op fields: stream, name, category, kind, layer, micro-batch, ring
// step, FLOPs, bytes, for comm ops the collective, dimension, seq, message
// bytes, bytes per peer, peer or group ranks and root, and for routed-expert
// GEMMs the experts of e->rank's EP coordinate and their token counts (on one
// rank per set of ranks routing the same tokens: tp coordinate 0, and sp
// coordinate 0 when replicated over sp). e->rank must be set before the call.
// Resets the comm and expert fields otherwise, so one event can be reused.
// `replicas` (EPLB, ProgramBuilder::all_replicas; null or empty without): the
// expert of each slot, per layer.
void FillOpEvent(const Op& op, const Placement& placement, trace::OpEvent* e,
                 const std::vector<ExpertReplicas>* replicas = nullptr);

}  // namespace shardscope

#endif  // SHARDSCOPE_RUN_OP_EVENT_H_
