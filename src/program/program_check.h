// CheckProgram: verifies that a PhaseProgram is consistent across its ranks and
// can run to completion. Used by the tests and, before running, by the simulator
// and the executors. Pure function; thread-safe.
#ifndef SHARDSCOPE_PROGRAM_PROGRAM_CHECK_H_
#define SHARDSCOPE_PROGRAM_PROGRAM_CHECK_H_

#include "core/status.h"
#include "plan/placement.h"
#include "program/program.h"

namespace shardscope {

// Returns the first violation found (naming the rank, op id and op name) of:
//  - one RankProgram per rank, in rank order; op ids equal their index; deps
//    point to earlier ops; compute ops on the compute stream, comm ops on the
//    stream of their dimension; costs ≥ 0; replication ≥ 1; an op's role
//    (when set) is one of its kind;
//  - collectives: the group exists, has the op's dimension and holds the rank;
//    every member posts the group's collectives in the same order (seq 0, 1, …)
//    with the same collective, role, bytes and (broadcast) root; all-to-all:
//    peer_sends are non-zero entries at increasing positions inside the group,
//    summing to bytes, and a combine right after the dispatch of its layer and
//    micro-batch (seq + 1) sends member j what j sent in the dispatch;
//  - point-to-point: the peer is in the rank's group of that dimension; every
//    send has exactly one recv with the same pair, seq and bytes, and back;
//  - no deadlock: running each stream in order, an op starting once its deps
//    are done, a collective finishing when all members have reached it and a
//    send/recv when both sides have (rendezvous), every op finishes.
Status CheckProgram(const PhaseProgram& program, const Placement& placement);

}  // namespace shardscope

#endif  // SHARDSCOPE_PROGRAM_PROGRAM_CHECK_H_
