// The read statistics every trace reader keeps, in one table (Perfetto's
// stats table is the model): each stat has a stable name, a severity and the
// words the read summary shows, with "{}" for its detail (an arg's name, a
// phase, …). docs/trace_format.md lists them all (read_stat_test checks it).
// Stateless and thread-safe.
#ifndef SHARDSCOPE_TRACE_READ_STAT_H_
#define SHARDSCOPE_TRACE_READ_STAT_H_

#include <cstdint>
#include <span>
#include <string_view>

namespace shardscope::trace {

enum class Severity {
  kSkipped,  // data loss: a malformed event, dropped
  kIgnored,  // info: a well-formed event ShardScope does not analyse
  kNote,     // caveat: an event kept with part of its data unknown
};

// X(enumerator, name, severity, summary text). Skipped, then ignored, then
// notes; within each, the ShardScope reader's first, then the importers'.
#define SHARDSCOPE_READ_STATS(X)                                                                   \
  X(kInvalidJson, "invalid_json", kSkipped, "invalid JSON")                                        \
  X(kNotAnObject, "event_not_object", kSkipped, "event is not a JSON object")                      \
  X(kArgsNotObject, "args_not_object", kSkipped, "args is not an object")                          \
  X(kBadArgValue, "bad_arg_value", kSkipped, "bad value of args.{}")                               \
  X(kCounterNotNumber, "counter_not_number", kSkipped, "counter value is not a number")            \
  X(kBadMetadataArgs, "bad_metadata_args", kSkipped, "bad metadata args")                          \
  X(kPhNotString, "ph_not_string", kSkipped, "ph is not a string")                                 \
  X(kPidNotInteger, "pid_not_integer", kSkipped, "pid is not an integer")                          \
  X(kTidNotInteger, "tid_not_integer", kSkipped, "tid is not an integer")                          \
  X(kNameNotString, "name_not_string", kSkipped, "name is not a string")                           \
  X(kMissingPh, "missing_ph", kSkipped, "missing ph")                                              \
  X(kMissingPid, "missing_pid", kSkipped, "missing pid")                                           \
  X(kIdOutOfRange, "id_out_of_range", kSkipped, "pid or tid out of range")                         \
  X(kMissingTs, "missing_ts", kSkipped, "missing ts")                                              \
  X(kTimeNotNumber, "time_not_number", kSkipped, "ts or dur is not a number")                      \
  X(kMissingDur, "missing_dur", kSkipped, "X event without dur")                                   \
  X(kNegativeDur, "negative_dur", kSkipped, "negative dur")                                        \
  X(kPhaseSpanWithoutPhase, "phase_span_without_phase", kSkipped, "phase span without args.phase") \
  X(kStepSpanWithoutStep, "step_span_without_step", kSkipped, "step span without args.step")       \
  X(kBytesPerPeerLength, "bytes_per_peer_length", kSkipped,                                        \
    "bytes_per_peer length differs from the group size")                                           \
  X(kExpertTokensLength, "expert_tokens_length", kSkipped,                                         \
    "expert_tokens length differs from experts")                                                   \
  X(kTopLevelNotObject, "top_level_not_object", kSkipped, "top-level \"{}\" is not a JSON object") \
  X(kTopLevelNotJson, "top_level_not_json", kSkipped, "top-level \"{}\" is not valid JSON")        \
  X(kStepWithoutNumber, "kineto_step_without_number", kSkipped,                                    \
    "ProfilerStep# without a step number")                                                         \
  X(kGpuEventWithoutPid, "kineto_gpu_event_without_pid", kSkipped, "GPU event without pid")        \
  X(kGpuPidNotInteger, "kineto_gpu_pid_not_integer", kSkipped,                                     \
    "GPU event pid is not an integer (the device)")                                                \
  X(kGpuTidNotInteger, "kineto_gpu_tid_not_integer", kSkipped,                                     \
    "GPU event tid is not an integer (the stream)")                                                \
  X(kXlaIdNotInteger, "xla_id_not_integer", kSkipped, "X event without an integer pid/tid")        \
  X(kXlaTsNotNumber, "xla_ts_not_number", kSkipped, "X event without a numeric ts")                \
  X(kXlaDurNotNumber, "xla_dur_not_number", kSkipped, "X event without a numeric dur")             \
  X(kXlaNegativeDur, "xla_negative_dur", kSkipped, "X event with a negative dur")                  \
  X(kXlaTimeOverflow, "xla_time_overflow", kSkipped, "XLA event whose time overflows")             \
  X(kXlaNegativeDuration, "xla_negative_duration", kSkipped, "XLA event with a negative duration") \
  X(kXspaceNoMetadata, "xspace_event_without_metadata", kSkipped,                                  \
    "XEvent whose metadata_id has no XEventMetadata")                                              \
  X(kNcclBeginWithoutEnd, "nccl_begin_without_end", kSkipped, "'b' event without its 'e'")         \
  X(kNcclEndWithoutBegin, "nccl_end_without_begin", kSkipped, "{} 'e' event without its 'b'")      \
  X(kNcclTsNotNumber, "nccl_ts_not_number", kSkipped, "{} event without a numeric ts")             \
  X(kNcclCallWithoutRank, "nccl_call_without_rank", kSkipped,                                      \
    "COLL/P2P event without an integer Rank")                                                      \
  X(kNcclCallWithoutCount, "nccl_call_without_count", kSkipped,                                    \
    "COLL/P2P event without an integer Count (or beyond 2^40)")                                    \
  X(kNcclCallEndsEarly, "nccl_call_ends_before_it_begins", kSkipped,                               \
    "COLL/P2P event that ends before it begins")                                                   \
  X(kNcclLineNotObject, "nccl_line_not_object", kSkipped,                                          \
    "line that is not a JSON object (truncated?)")                                                 \
  X(kNcclRecordWithoutRank, "nccl_record_without_rank", kSkipped,                                  \
    "ncclProfileColl/P2p record without a rank")                                                   \
  X(kNcclRecordWithoutCount, "nccl_record_without_count", kSkipped,                                \
    "ncclProfileColl/P2p record without an integer details.count (or beyond 2^40)")                \
  X(kNcclRecordWithoutTime, "nccl_record_without_time", kSkipped,                                  \
    "ncclProfileColl/P2p record without numeric start.ts and stop.ts")                             \
  X(kNcclRecordEndsEarly, "nccl_record_ends_before_it_begins", kSkipped,                           \
    "ncclProfileColl/P2p record that ends before it begins")                                       \
  X(kPhNotAnalysed, "ph_not_analysed", kIgnored, "ph '{}'")                                        \
  X(kMetadataNotAnalysed, "metadata_not_analysed", kIgnored, "metadata '{}'")                      \
  X(kUnknownPhase, "unknown_phase", kIgnored, "unknown args.phase value (op kept)")                \
  X(kUnknownCollective, "unknown_collective", kIgnored, "unknown args.collective value (op kept)") \
  X(kUnknownDim, "unknown_dim", kIgnored, "unknown args.dim value (op kept)")                      \
  X(kEventWithoutCat, "kineto_event_without_cat", kIgnored, "X event without cat")                 \
  X(kHostCat, "kineto_host_cat", kIgnored, "host/other cat '{}'")                                  \
  X(kForeignPh, "foreign_ph_not_analysed", kIgnored, "ph \"{}\"")                                  \
  X(kXlaMetadata, "xla_metadata_not_analysed", kIgnored, "M event \"{}\"")                         \
  X(kXlaUnnamedProcess, "xla_unnamed_process", kIgnored, "XLA events of a process without a name") \
  X(kXlaProcess, "xla_process_not_analysed", kIgnored, "XLA process \"{}\"")                       \
  X(kXlaLine, "xla_line_not_analysed", kIgnored, "XLA line \"{}\"")                                \
  X(kXlaAsyncInFlight, "xla_async_in_flight", kIgnored,                                            \
    "Async XLA Ops: collective in flight (taken from its -start/-done)")                           \
  X(kXlaPlane, "xla_plane_not_analysed", kIgnored, "XLA plane \"{}\"")                             \
  X(kXspaceAggregated, "xspace_aggregated_event", kIgnored,                                        \
    "XEvent with num_occurrences (aggregated, no time)")                                           \
  X(kNcclEventWithoutPh, "nccl_event_without_ph", kIgnored, "event without ph")                    \
  X(kNcclCategory, "nccl_category_not_analysed", kIgnored, "{} events")                            \
  X(kNcclKernelChOutside, "nccl_kernel_ch_outside_call", kIgnored,                                 \
    "GPU KernelCh outside any COLL/P2P")                                                           \
  X(kNcclKernelCh, "nccl_kernel_ch", kIgnored,                                                     \
    "GPU KernelCh events (their GPU clocks time their COLL/P2P)")                                  \
  X(kNcclStateRecords, "nccl_state_records", kIgnored, "state records")                            \
  X(kNcclUntypedRecords, "nccl_untyped_records", kIgnored, "records without a type")               \
  X(kNcclRecordType, "nccl_record_type_not_analysed", kIgnored, "{}")                              \
  X(kNcclCuptiKernel, "nccl_cupti_kernel", kIgnored,                                               \
    "CUPTI KERNEL records (they place collectives on the GPU timeline)")                           \
  X(kNcclProfileKernelChOutside, "nccl_profile_kernel_ch_outside_call", kIgnored,                  \
    "ncclProfileKernelCh without its Coll/P2p")                                                    \
  X(kNcclProfileKernelCh, "nccl_profile_kernel_ch", kIgnored,                                      \
    "ncclProfileKernelCh (its GPU timer times its Coll/P2p)")                                      \
  X(kWorldGroupAssumed, "world_group_assumed", kNote,                                              \
    "collective given the whole world as its group (the traces name no process group; every "      \
    "rank ran the same calls)")                                                                    \
  X(kOpsOnOtherDevices, "kineto_ops_on_other_devices", kNote,                                      \
    "GPU ops on {} devices, all attributed to rank {}")                                            \
  X(kGroupTruncated, "kineto_group_truncated", kNote,                                              \
    "group unknown: \"Process Group Ranks\" truncated and no other source")                        \
  X(kGroupUnknown, "kineto_group_unknown", kNote,                                                  \
    "group unknown: no \"Process Group Ranks\" or process-group config")                           \
  X(kCommWithoutDtype, "kineto_comm_without_dtype", kNote,                                         \
    "communication kernel without dtype: bytes unknown")                                           \
  X(kUnknownDtype, "kineto_unknown_dtype", kNote, "unknown dtype '{}': bytes unknown")             \
  X(kCommSizedFromInputDims, "kineto_comm_sized_from_input_dims", kNote,                           \
    "communication kernel sized from its host call's Input Dims")                                  \
  X(kCommWithoutSize, "kineto_comm_without_size", kNote,                                           \
    "communication kernel without message size: bytes unknown")                                    \
  X(kP2pWithoutPeer, "kineto_p2p_without_peer", kNote, "send/recv without a known peer")           \
  X(kGemmShapeFromHost, "kineto_gemm_shape_from_host", kNote,                                      \
    "compute kernel given the shape of the host matrix product that launched it")                  \
  X(kCommCollectiveUnknown, "kineto_collective_unknown", kNote,                                    \
    "communication kernel whose collective is unknown (name and args do not say)")                 \
  X(kCollectiveNotModelled, "kineto_collective_not_modelled", kNote,                               \
    "collective '{}' has no counterpart in the trace model")                                       \
  X(kCommWithoutArgs, "kineto_comm_without_args", kNote,                                           \
    "communication kernel without collective args: bytes and group unknown")                       \
  X(kXlaDoneWithoutStart, "xla_done_without_start", kNote,                                         \
    "asynchronous collective -done without its -start (kept as other work)")                       \
  X(kXlaStartWithoutDone, "xla_start_without_done", kNote,                                         \
    "asynchronous collective -start without its -done: in-flight time unknown")                    \
  X(kXlaGroupUnreadable, "xla_group_unreadable", kNote, "{}: collective kept without its group")   \
  X(kXlaGroupWithoutDevice, "xla_group_without_device", kNote,                                     \
    "replica_groups do not name the device: collective kept without its group")                    \
  X(kXlaWithoutHlo, "xla_collective_without_hlo", kNote,                                           \
    "collective without HLO text: size and group unknown, kept as comm time only")                 \
  X(kXlaSizeUnreadable, "xla_size_unreadable", kNote, "{}: collective kept as comm time only")     \
  X(kNcclUnknownDatatype, "nccl_unknown_datatype", kNote,                                          \
    "unknown NCCL datatype \"{}\": {} kept as comm time only")                                     \
  X(kNcclCollectiveNotModelled, "nccl_collective_not_modelled", kNote,                             \
    "NCCL {}: no such collective in the trace model, kept as comm time and bytes only")            \
  X(kNcclP2pWithoutPeer, "nccl_p2p_without_peer", kNote,                                           \
    "NCCL {} without Peer: kept as comm time only")                                                \
  X(kNcclRanksUnknown, "nccl_ranks_unknown", kNote,                                                \
    "NCCL {}: communicator ranks unknown, kept as comm time only")

enum class Stat : uint16_t {
#define SHARDSCOPE_STAT_ENUM(e, name, severity, text) e,
  SHARDSCOPE_READ_STATS(SHARDSCOPE_STAT_ENUM)
#undef SHARDSCOPE_STAT_ENUM
      kNumStats,
};
inline constexpr size_t kNumStats = static_cast<size_t>(Stat::kNumStats);

struct StatInfo {
  Stat stat;
  std::string_view name;  // stable, snake_case: for docs and tools
  Severity severity;
  std::string_view text;  // the summary's words; each "{}" takes a detail
};

// Every stat, in the order of Stat.
std::span<const StatInfo> AllStats();
const StatInfo& InfoOf(Stat stat);
std::string_view SeverityName(Severity severity);  // "skipped", "ignored", "note"

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_READ_STAT_H_
