#include "serve/serving_simulator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "config/experiment_json.h"
#include "plan/placement.h"
#include "run/run_recorder.h"
#include "serve/iteration_cost.h"
#include "serve/kv_transfers.h"
#include "serve/replica_scheduler.h"
#include "serve/request_source.h"
#include "sim/simulator.h"

namespace shardscope::serve {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();
constexpr int32_t kIterationTrack = 0;
constexpr int32_t kFirstLaneTrack = 10;

// One iteration as the trace shows it.
struct IterationRecord {
  int32_t engine = 0;  // the scheduler's index: its trace process
  double start = 0, end = 0;
  int32_t prefill_requests = 0, decode_requests = 0;
  int64_t prefill_tokens = 0;
  int64_t waiting = 0, kv_blocks = 0, preempted = 0;
};

// The stages of one replica's pipeline, which its virtual engines share: an
// iteration enters the first stage when the previous one has left it, and
// leaves the last stage after the previous one has.
struct Pipeline {
  int64_t stages = 1;
  double first_stage_free = 0;  // when the previous iteration leaves the first stage
  double last_end = 0;          // when the previous iteration leaves the last stage
  int64_t iterations = 0;       // started so far (the first pays the cold start)
};

// One scheduler: a replica (pp = 1) or one of its pp virtual engines, each with
// its own requests and 1/pp of the replica's KV blocks.
struct Replica {
  Replica(const SchedulerSpec& spec, int64_t blocks, IterationCost* cost, bool prefill_only,
          size_t group, int32_t engine, int64_t workers)
      : scheduler(spec, blocks, prefill_only),
        cost(cost),
        group(group),
        engine(engine),
        workers(workers) {}
  ReplicaScheduler scheduler;
  IterationCost* cost;  // this replica's plan
  size_t group;         // the replica (or instance) it belongs to: its Pipeline
  int32_t engine;       // its virtual engine in the replica (0 … pp − 1)
  int64_t workers;      // worker processes a step goes to (tp × sp × ep)
  bool busy = false;
  Iteration iteration;
  double end = 0;
  std::vector<double> step_ends;  // a multi-step iteration's steps' ends
  // Overlap scheduling: requests that reached the engine after it launched its
  // next iteration, taken in when it launches the one after (cached: arrived
  // with its KV cache); and whether the iteration ending at `ended_at` left work.
  std::vector<std::pair<ServedRequest*, bool>> inbox;
  double ended_at = -1;
  bool continues = false;
};

int64_t ToNs(double seconds) { return std::llround(seconds * 1e9); }

// The CUDA graph a decode batch of `n` replays: the smallest capture size ≥ n;
// 0 (eager) above the largest or without graphs.
int64_t CudaGraphBatch(const std::vector<int64_t>& sizes, int64_t n) {
  auto it = std::lower_bound(sizes.begin(), sizes.end(), n);
  return it == sizes.end() ? 0 : *it;
}

// One decode step of `decodes` requests replayed as a CUDA graph of `padded`
// slots. The padding slots run the GEMMs but attend over one token: vLLM pads
// with sequence length 1 (vllm/worker/model_runner.py, `seq_lens.extend(
// itertools.repeat(1, cuda_graph_pad_size))`), TensorRT-LLM's PyTorch backend
// points every padding entry at one dummy generation request
// (pyexecutor/cuda_graph_runner.py, CUDA_GRAPH_DUMMY_REQUEST_ID). So: the padded
// batch at context 1, plus the real requests' attention over their contexts.
StatusOr<double> PaddedDecode(IterationCost& cost, int64_t decodes, int64_t padded, int64_t context,
                              bool replay) {
  if (padded <= decodes) return cost.Decode(decodes, context, replay);
  ASSIGN_OR_RETURN(const double slots, cost.Decode(padded, 1, replay));
  ASSIGN_OR_RETURN(const double real, cost.Decode(decodes, context, replay));
  ASSIGN_OR_RETURN(const double real_at_one, cost.Decode(decodes, 1, replay));
  return slots + std::max(0.0, real - real_at_one);
}

// One disaggregated instance's experiment: the instance's plan with dp = 1.
Experiment InstanceExperiment(const Experiment& e, const InstanceSpec& i, const char* role) {
  Experiment x = e;
  ParallelSpec& p = x.parallel;
  p = ParallelSpec{};
  p.strategy = role;
  p.tp = i.tp, p.sp = i.sp, p.ep = i.ep, p.pp = i.pp;
  // EPLB's redundant experts serve every instance (ep divides routed + redundant).
  p.redundant_experts = e.parallel.redundant_experts;
  p.expert_load_path = e.parallel.expert_load_path;
  p.expert_load = e.parallel.expert_load;
  x.workload.batch_size = std::max<int64_t>(i.ep, 1);
  x.workload.sequence_length = (p.sp > 1 ? 2 * p.sp : 1);
  x.name = fmt::format("{} ({} instance)", e.name, role);
  return x;
}

// Requests on non-overlapping lanes per replica (greedy interval partitioning).
Status WriteTrace(const Experiment& e, const Placement& placement, const ServingResult& result,
                  const std::vector<std::pair<int64_t, int32_t>>& engines,
                  const std::vector<ServedRequest>& requests,
                  const std::vector<IterationRecord>& iterations, const ServeOptions& options,
                  std::string* trace_path, std::string* metadata_path) {
  const nlohmann::json meta =
      run::RunMetadata(e, placement, "sim",
                       {{"options", sim::SimOptionsToJson(options.sim)},
                        {"calibration", result.calibration_source},
                        {"serving",
                         {{"replicas", result.replicas},
                          {"kv_blocks_per_replica", result.kv.blocks},
                          {"kv_block_size", result.kv.block_size},
                          {"metrics", ServingMetricsJson(result.metrics)}}}});
  ASSIGN_OR_RETURN(std::unique_ptr<run::RunRecorder> recorder,
                   run::RunRecorder::Open(e, meta, options.sim.trace_root, options.sim.trace_file));
  trace::TraceWriter* w = recorder->writer();
  const int64_t ranks_per_replica = e.parallel.world_size() / result.replicas;
  // One process per scheduler: a replica, or each of its virtual engines
  // (pp > 1), whose iterations overlap and whose requests are its own.
  for (size_t i = 0; i < engines.size(); ++i) {
    const int32_t pid = static_cast<int32_t>(i);
    // Named members, not a structured binding: clang-tidy 14 cannot capture one (C++20).
    const int64_t replica = engines[i].first;
    const int32_t engine = engines[i].second;
    const bool shared = std::count_if(engines.begin(), engines.end(),
                                      [&](const auto& x) { return x.first == replica; }) > 1;
    w->NameProcess(pid, shared
                            ? fmt::format("replica {} · virtual engine {} ({} devices)", replica,
                                          engine, ranks_per_replica)
                            : fmt::format("replica {} ({} devices)", replica, ranks_per_replica));
    w->NameThread(pid, kIterationTrack, "iterations");
  }
  for (const IterationRecord& it : iterations) {
    trace::OpEvent op;
    op.rank = it.engine;
    op.stream = kIterationTrack;
    op.name = fmt::format("iteration: {} prefill ({} tokens) + {} decode", it.prefill_requests,
                          it.prefill_tokens, it.decode_requests);
    op.kind = "iteration";
    op.ts_ns = ToNs(it.start);
    op.dur_ns = ToNs(it.end) - op.ts_ns;
    w->AddOp(op);
    w->AddCounter(trace::CounterEvent{it.engine,
                                      "serving",
                                      op.ts_ns,
                                      {{"batch", it.prefill_requests + it.decode_requests},
                                       {"decode", static_cast<double>(it.decode_requests)},
                                       {"prefill_tokens", static_cast<double>(it.prefill_tokens)},
                                       {"waiting", static_cast<double>(it.waiting)},
                                       {"kv_blocks", static_cast<double>(it.kv_blocks)},
                                       {"preempted", static_cast<double>(it.preempted)}}});
  }
  // Lanes: the lane whose last request ended earliest takes the next one.
  std::vector<std::vector<double>> lane_end(engines.size());
  for (const ServedRequest& r : requests) {
    if (r.rejected || r.finish < 0) continue;
    std::vector<double>& lanes = lane_end[r.engine];
    size_t lane = 0;
    while (lane < lanes.size() && lanes[lane] > r.arrival) ++lane;
    if (lane == lanes.size()) {
      lanes.push_back(0);
      w->NameThread(static_cast<int32_t>(r.engine), kFirstLaneTrack + static_cast<int32_t>(lane),
                    fmt::format("requests {}", lane));
    }
    lanes[lane] = r.finish;
    auto add = [&](std::string name, std::string kind, double begin, double end,
                   trace::RequestArgs args = {}) {
      trace::OpEvent op;
      op.request = args;
      op.rank = static_cast<int32_t>(r.engine);
      op.stream = kFirstLaneTrack + static_cast<int32_t>(lane);
      op.name = std::move(name);
      op.category = trace::Category::kOther;
      op.kind = std::move(kind);
      op.ts_ns = ToNs(begin);
      op.dur_ns = ToNs(end) - op.ts_ns;
      w->AddOp(op);
    };
    // The request's own span carries its lifetime as args, for `analyze`.
    trace::RequestArgs args;
    args.id = r.id;
    args.prompt_tokens = r.prompt;
    args.output_tokens = r.output;
    args.scheduled_ns = ToNs(r.first_scheduled);
    args.first_token_ns = ToNs(r.first_token);
    args.kv_arrival_ns = r.kv_arrival > 0 ? ToNs(r.kv_arrival) : -1;
    args.last_token_ns = ToNs(r.last_token);
    args.decode_only = r.decode_only;
    args.preemptions = r.preemptions;
    args.warmup = !r.measured;
    add(fmt::format("request {} ({} → {} tokens{})", r.id, r.prompt, r.output,
                    r.measured ? "" : ", warm-up"),
        "request", r.arrival, r.finish, args);
    add("queued", "request_queued", r.arrival, r.first_scheduled);
    if (!r.decode_only) add("prefill", "request_prefill", r.first_scheduled, r.first_token);
    if (r.kv_arrival > 0) add("kv transfer", "request_kv_transfer", r.first_token, r.kv_arrival);
    if (r.last_token > r.first_token) {
      add("decode", "request_decode", r.first_token, r.last_token);
    }
    // The response overhead (calibration): detokenise and send the response.
    if (r.finish > r.last_token) add("respond", "request_respond", r.last_token, r.finish);
  }
  // Asked again before the trace is kept: Ctrl-C while it was written leaves nothing.
  if (options.sim.cancelled && options.sim.cancelled()) {
    return Cancelled("interrupted; the serving simulation stopped and left no trace");
  }
  *trace_path = recorder->trace_path();
  *metadata_path = recorder->metadata_path();
  return recorder->Close();
}

// One served run: the replicas' schedulers, the requests and the event loop
// that moves them (arrivals, iteration ends, KV caches arriving).
class ServingRun {
 public:
  ServingRun(const Experiment& e, const ServeOptions& options, Placement placement)
      : e_(e), spec_(*e.serving), options_(options), placement_(std::move(placement)) {}

  StatusOr<ServingResult> Run();

 private:
  Status BuildColocated();
  Status BuildDisaggregated();
  Status MakeCost(const Experiment& x);
  void AddReplica(int64_t blocks, IterationCost* cost, bool prefill_only, int64_t pp,
                  int64_t workers);
  void DrawRequests();
  // `refill`: a closed loop's next request, sent when one finished (or was refused).
  void Issue(double at, bool refill);
  void Advance(double t);
  // The replica of [begin, end) a request goes to.
  size_t Route(size_t begin, size_t end);
  Status StartIdleReplicas();
  Status StartIteration(size_t index);
  StatusOr<Iteration> Schedule(size_t index);
  StatusOr<double> KernelSeconds(Replica& rep, const Iteration& it);
  void Account(size_t index, const Iteration& it, double start, double end, double stage,
               double seconds);
  Status EndIteration(size_t index);
  void ArriveKvCaches();
  void Arrive();
  // A request reaches replica `index`'s scheduler (or, overlapped, its inbox).
  void Deliver(size_t index, ServedRequest* r, bool cached);
  void TakeInbox(size_t index);

  const Experiment& e_;
  const ServingSpec& spec_;
  const ServeOptions& options_;
  Placement placement_;
  ServingResult result_;
  // Iteration costs: one plan for every replica, or the prefill and the decode instances'.
  std::vector<std::unique_ptr<IterationCost>> costs_;
  std::vector<Replica> replicas_;    // every scheduler: a replica's virtual engines in a row
  std::vector<Pipeline> pipelines_;  // per replica or instance
  size_t entry_replicas_ = 0;        // arrivals go to replicas [0, entry_replicas_)
  double kv_bytes_per_token_ = 0;
  std::optional<KvTransfers> kv_network_;  // disaggregated: caches in flight
  double request_overhead_ = 0;
  bool overlap_ = false;  // scheduler.overlap_schedule, colocated replicas
  std::vector<ServedRequest> requests_;
  bool closed_ = false;
  std::deque<size_t> pending_;  // requests waiting to arrive, in arrival order
  std::vector<bool> refill_;    // per request: issued by a closed loop's finish
  size_t issued_ = 0;
  double scheduled_at_ = -1;  // the last instant idle replicas were offered work
  Occupancy occ_;
  std::vector<double> itl_;
  std::vector<IterationRecord> records_;
  double now_ = 0, first_arrival_ = kNever, last_finish_ = 0;
  int64_t in_system_ = 0, kv_used_ = 0, finished_count_ = 0, next_round_robin_ = 0;
  int64_t next_progress_ = 1;
  std::vector<ServedRequest*> finished_;
  std::vector<int64_t> arrived_;  // KV caches arriving at one instant
  std::vector<bool> dirty_;       // replicas with news since they last scheduled
};

Status ServingRun::MakeCost(const Experiment& x) {
  ASSIGN_OR_RETURN(std::unique_ptr<IterationCost> c,
                   IterationCost::Create(x, options_.sim.calibration_file, options_.sim.allreduce,
                                         spec_.scheduler.grid_points_per_octave));
  costs_.push_back(std::move(c));
  return Status::Ok();
}

// A replica (or instance) of `pp` stages runs pp virtual engines, as vLLM
// does: each schedules its own requests over 1/pp of the KV blocks, and their
// iterations follow each other through the stages.
void ServingRun::AddReplica(int64_t blocks, IterationCost* cost, bool prefill_only, int64_t pp,
                            int64_t workers) {
  const size_t group = pipelines_.size();
  pipelines_.push_back(Pipeline{pp});
  for (int64_t v = 0; v < pp; ++v) {
    replicas_.emplace_back(spec_.scheduler, blocks / pp, cost, prefill_only, group,
                           static_cast<int32_t>(v), workers);
    if (e_.speculative.enabled() && !prefill_only) {
      replicas_.back().scheduler.SetSpeculative(e_.speculative.TokensPerStep(),
                                                e_.speculative.draft_tokens + 1);
    }
  }
}

Status ServingRun::BuildColocated() {
  ASSIGN_OR_RETURN(result_.kv, PlanKvBudget(e_));
  RETURN_IF_ERROR(MakeCost(e_));
  result_.replicas = e_.parallel.dp;
  result_.devices = e_.parallel.world_size();
  for (int64_t r = 0; r < result_.replicas; ++r) {
    AddReplica(result_.kv.blocks, costs_[0].get(), false, e_.parallel.pp,
               e_.parallel.tp * e_.parallel.sp * e_.parallel.ep);
  }
  entry_replicas_ = replicas_.size();
  return Status::Ok();
}

Status ServingRun::BuildDisaggregated() {
  const DisaggregationSpec& d = *spec_.disaggregation;
  const Experiment pe = InstanceExperiment(e_, d.prefill, "prefill");
  const Experiment de = InstanceExperiment(e_, d.decode, "decode");
  result_.devices =
      d.prefill.instances * d.prefill.world_size() + d.decode.instances * d.decode.world_size();
  if (result_.devices > e_.cluster.num_devices()) {
    return InvalidArgument(
        "experiment '{}': field 'disaggregation': {} prefill × {} + {} decode × {} devices "
        "exceed the {} devices of cluster '{}'",
        e_.name, d.prefill.instances, d.prefill.world_size(), d.decode.instances,
        d.decode.world_size(), e_.cluster.num_devices(), e_.cluster.name);
  }
  auto prefill_kv = PlanKvBudget(pe);
  if (!prefill_kv.ok()) return prefill_kv.status().WithPrefix("prefill instance");
  auto decode_kv = PlanKvBudget(de);
  if (!decode_kv.ok()) return decode_kv.status().WithPrefix("decode instance");
  result_.prefill_kv = *prefill_kv;
  result_.kv = *decode_kv;
  RETURN_IF_ERROR(MakeCost(pe));
  RETURN_IF_ERROR(MakeCost(de));
  result_.replicas = d.prefill.instances + d.decode.instances;
  for (int64_t r = 0; r < d.prefill.instances; ++r) {
    AddReplica(result_.prefill_kv.blocks, costs_[0].get(), true, d.prefill.pp,
               d.prefill.tp * d.prefill.sp * d.prefill.ep);
  }
  entry_replicas_ = replicas_.size();
  for (int64_t r = 0; r < d.decode.instances; ++r) {
    AddReplica(result_.kv.blocks, costs_[1].get(), false, d.decode.pp,
               d.decode.tp * d.decode.sp * d.decode.ep);
  }
  // The whole KV cache of a request crosses the scale-out network: a flow
  // through its prefill instance's NICs and its decode instance's.
  kv_bytes_per_token_ = ModelKvBytesPerToken(e_);
  const double nic =
      e_.cluster.scale_out.nic_bandwidth_per_device * costs_[0]->calibration().network_efficiency;
  if (!(nic > 0)) {
    return InvalidArgument(
        "experiment '{}': field 'disaggregation': cluster '{}' has no scale-out network "
        "(nic_gbit_s) to carry the KV caches from prefill to decode instances",
        e_.name, e_.cluster.name);
  }
  std::vector<double> nic_bandwidth;  // per instance
  for (int64_t i = 0; i < result_.replicas; ++i) {
    const bool prefill = i < d.prefill.instances;
    nic_bandwidth.push_back(
        nic * static_cast<double>(prefill ? d.prefill.world_size() : d.decode.world_size()));
  }
  kv_network_.emplace(std::move(nic_bandwidth), e_.cluster.scale_out.latency);
  return Status::Ok();
}

void ServingRun::DrawRequests() {
  const std::vector<RequestSpec> drawn = MakeRequests(spec_, e_.workload.seed);
  requests_.resize(drawn.size());
  for (size_t i = 0; i < drawn.size(); ++i) {
    ServedRequest& r = requests_[i];
    r.id = static_cast<int64_t>(i);
    r.arrival = drawn[i].arrival;
    r.prompt = drawn[i].prompt_tokens;
    r.output = drawn[i].output_tokens;
    r.measured = r.id >= spec_.warmup_requests;
    r.decode_only = spec_.decode_only;
    r.cached =
        CachedPrefixTokens(r.prompt, spec_.prefix_cache_hit_rate, spec_.scheduler.block_size);
  }
  closed_ = spec_.arrivals.process == ArrivalProcess::kClosedLoop;
  if (closed_) {
    refill_.assign(requests_.size(), false);
    for (int64_t i = 0; i < spec_.arrivals.concurrency; ++i) Issue(0, false);
  } else {
    while (issued_ < requests_.size()) Issue(requests_[issued_].arrival, false);
  }
}

void ServingRun::Issue(double at, bool refill) {
  if (issued_ >= requests_.size()) return;
  if (closed_) refill_[issued_] = refill;
  // Arrivals stay in order: a closed loop's refill after a response overhead
  // (calibration) can be issued before a rejected request's, at `now`.
  if (closed_ && !pending_.empty()) at = std::max(at, requests_[pending_.back()].arrival);
  if (closed_ && spec_.duration > 0 && at > spec_.duration) return;
  requests_[issued_].arrival = at;
  pending_.push_back(issued_++);
}

void ServingRun::Advance(double t) {
  occ_.in_system += static_cast<double>(in_system_) * (t - now_);
  occ_.kv_blocks += static_cast<double>(kv_used_) * (t - now_);
  now_ = t;
}

size_t ServingRun::Route(size_t begin, size_t end) {
  size_t target = begin;
  if (spec_.scheduler.router == RouterPolicy::kRoundRobin) {
    target = begin + static_cast<size_t>(next_round_robin_++ % static_cast<int64_t>(end - begin));
  } else {
    for (size_t i = begin + 1; i < end; ++i) {
      if (replicas_[i].scheduler.outstanding() < replicas_[target].scheduler.outstanding()) {
        target = i;
      }
    }
  }
  return target;
}

// The scheduler's next iteration (rescheduled while it only preempted).
StatusOr<Iteration> ServingRun::Schedule(size_t index) {
  Replica& rep = replicas_[index];
  Iteration it;
  const int64_t blocks_before = rep.scheduler.used_blocks();
  int64_t preempted = 0;
  for (int attempt = 0; it.empty() && rep.scheduler.HasWork(); ++attempt) {
    it = rep.scheduler.Schedule();
    preempted += it.preempted;
    if (it.empty() && (it.preempted == 0 || attempt > 2)) {
      return InternalError(
          "experiment '{}': replica {} has {} waiting and {} running requests "
          "but scheduled nothing",
          e_.name, index, rep.scheduler.waiting(), rep.scheduler.running());
    }
  }
  kv_used_ += rep.scheduler.used_blocks() - blocks_before;
  it.preempted = preempted;
  return it;
}

// The iteration's kernels on the engine; a multi-step one's step ends (from
// its start) go to rep.step_ends.
StatusOr<double> ServingRun::KernelSeconds(Replica& rep, const Iteration& it) {
  const sim::OverheadTerms& terms = rep.cost->terms();
  const int64_t decodes = static_cast<int64_t>(it.decode.size());
  const int64_t context = decodes > 0 ? std::llround(it.decode_context_mean()) : 0;
  double seconds = 0;
  rep.step_ends.clear();
  if (it.prefill.empty()) {
    // it.steps steps (multi-step), each over one more cached token; a batch
    // within the CUDA-graph capture sizes is padded to the next and replayed.
    const int64_t padded = CudaGraphBatch(spec_.scheduler.cuda_graph_batch_sizes, decodes);
    const bool replay = terms.cuda_graphs || padded > 0;
    for (int64_t k = 0; k < it.steps; ++k) {
      ASSIGN_OR_RETURN(const double step,
                       PaddedDecode(*rep.cost, decodes, padded, context + k, replay));
      seconds += step;
      rep.step_ends.push_back(seconds);
    }
    return seconds;
  }
  // Prefill chunks, and the decodes mixed in with them, in one fused pass.
  const int64_t n = static_cast<int64_t>(it.prefill.size());
  if (decodes > 0) {
    ASSIGN_OR_RETURN(seconds, rep.cost->Mixed(n, it.prefill_tokens(), decodes, context));
  } else {
    ASSIGN_OR_RETURN(seconds, rep.cost->Prefill(n, (it.prefill_tokens() + n - 1) / n));
  }
  // Attention over the chunks' cached prefixes: with data-parallel attention
  // (ep > 1) the ranks attend over their own requests' prefixes side by side.
  if (rep.cost->attention_ranks() > 1) {
    std::vector<std::pair<int64_t, int64_t>> chunks;
    chunks.reserve(it.prefill.size());
    for (const auto& [r, chunk] : it.prefill) chunks.emplace_back(r->computed, chunk);
    ASSIGN_OR_RETURN(const double extra, rep.cost->PriorContextSeconds(chunks));
    return seconds + extra;
  }
  for (const auto& [r, chunk] : it.prefill) {
    ASSIGN_OR_RETURN(const double extra, rep.cost->PriorContextExtra(r->computed, chunk));
    seconds += extra;
  }
  return seconds;
}

Status ServingRun::StartIteration(size_t index) {
  ASSIGN_OR_RETURN(Iteration it, Schedule(index));
  if (it.empty()) return Status::Ok();
  Replica& rep = replicas_[index];
  ASSIGN_OR_RETURN(double seconds, KernelSeconds(rep, it));
  // Calibrated overheads (0 by default): host scheduling, a CUDA-graph replay
  // for decode-only iterations (whose kernels then pay no launch), cold start;
  // and the engine's serving path.
  const sim::OverheadTerms& terms = rep.cost->terms();
  const bool decode_only = it.prefill.empty();
  const int64_t decodes = static_cast<int64_t>(it.decode.size());
  const int64_t batch_requests = static_cast<int64_t>(it.prefill.size()) + decodes;
  int64_t produced = decodes * it.steps;
  for (const auto& [r, chunk] : it.prefill) produced += r->computed + chunk >= r->target ? 1 : 0;
  const double kernels = seconds;
  seconds += terms.IterationSeconds(decode_only);
  seconds += spec_.path.IterationSeconds(batch_requests, produced, rep.workers);
  Pipeline& pipe = pipelines_[rep.group];
  if (pipe.iterations++ == 0) seconds += terms.cold_start;
  const double host = seconds - kernels;
  // Through the stages (one, unless pp > 1): the first once the previous
  // iteration has left it, the last once the previous one has left it.
  const double stage = seconds / static_cast<double>(pipe.stages);
  const double start = std::max(now_, pipe.first_stage_free);
  const double end = std::max(start + seconds, pipe.last_end + stage);
  pipe.first_stage_free = start + stage;
  pipe.last_end = end;
  // Multi-step: step k ends its kernels' time after the host part, shifted as the whole.
  for (double& t : rep.step_ends) t = end - seconds + host + t;
  for (auto& [r, chunk] : it.prefill) {
    if (r->first_scheduled < 0) r->first_scheduled = start;
  }
  for (ServedRequest* r : it.decode) {  // decode-only requests start here
    if (r->first_scheduled < 0) r->first_scheduled = start;
  }
  Account(index, it, start, end, stage, seconds);
  rep.iteration = std::move(it);
  rep.busy = true;
  rep.end = end;
  // Overlapped, the engine takes in what arrived while the previous iteration
  // ran only now, after launching this one: for the next.
  TakeInbox(index);
  return Status::Ok();
}

// Occupancy, the trace's record and the kept iteration rows of one iteration.
void ServingRun::Account(size_t index, const Iteration& it, double start, double end, double stage,
                         double seconds) {
  const Replica& rep = replicas_[index];
  const int64_t batch = static_cast<int64_t>(it.prefill.size() + it.decode.size());
  occ_.busy += stage;  // the replica's first stage
  occ_.batch += static_cast<double>(batch) * stage;
  occ_.max_batch = std::max(occ_.max_batch, batch);
  occ_.max_kv_occupancy =
      std::max(occ_.max_kv_occupancy, static_cast<double>(rep.scheduler.used_blocks()) /
                                          static_cast<double>(rep.scheduler.total_blocks()));
  ++occ_.iterations;
  if (options_.sim.write_trace) {
    records_.push_back({static_cast<int32_t>(index), start, end,
                        static_cast<int32_t>(it.prefill.size()),
                        static_cast<int32_t>(it.decode.size()), it.prefill_tokens(),
                        rep.scheduler.waiting(), rep.scheduler.used_blocks(), it.preempted});
  }
  if (options_.keep_requests) {
    result_.iteration_seconds.push_back(seconds);
    result_.iteration_prefill_tokens.push_back(it.prefill_tokens());
  }
}

// Idle replicas with news schedule, once everything at this instant is handled.
Status ServingRun::StartIdleReplicas() {
  for (size_t i = 0; i < replicas_.size(); ++i) {
    // A replica left without work takes what reached it meanwhile at once.
    if (dirty_[i] && !replicas_[i].busy && !replicas_[i].scheduler.HasWork()) TakeInbox(i);
    if (dirty_[i] && !replicas_[i].busy && replicas_[i].scheduler.HasWork()) {
      RETURN_IF_ERROR(StartIteration(i));
    }
    dirty_[i] = false;
  }
  return Status::Ok();
}

// Replica `index`'s iteration ends now: tokens, finished requests, and a
// prefill instance's requests sent on to decode instances.
Status ServingRun::EndIteration(size_t index) {
  // Asked once per iteration: a long served run stops promptly on Ctrl-C.
  if (options_.sim.cancelled && options_.sim.cancelled()) {
    return Cancelled("interrupted; the serving simulation stopped and left no trace");
  }
  Replica& rep = replicas_[index];
  const int64_t blocks_before = rep.scheduler.used_blocks();
  finished_.clear();
  if (rep.step_ends.size() > 1) {
    rep.scheduler.Complete(rep.iteration, rep.step_ends, &itl_, &finished_);
  } else {
    rep.scheduler.Complete(rep.iteration, now_, &itl_, &finished_);
  }
  kv_used_ += rep.scheduler.used_blocks() - blocks_before;
  rep.busy = false;
  rep.ended_at = now_;
  rep.continues = rep.scheduler.HasWork();
  for (ServedRequest* r : finished_) {
    if (!r->done()) {
      // Prefilled on a prefill instance: its KV cache goes to a decode instance.
      const size_t to = Route(entry_replicas_, replicas_.size());
      const double bytes = static_cast<double>(r->computed) * kv_bytes_per_token_;
      kv_network_->Start(now_, rep.group, replicas_[to].group, bytes, r->id);
      r->replica = static_cast<int64_t>(replicas_[to].group);
      r->engine = static_cast<int64_t>(to);
      ++result_.kv_transfers;
      result_.kv_transfer_bytes += bytes;
      continue;
    }
    --in_system_;
    ++finished_count_;
    r->finish += rep.cost->terms().response_overhead;  // detokenise, respond
    last_finish_ = std::max(last_finish_, r->finish);
    if (closed_) Issue(r->finish, true);
  }
  if (options_.sim.progress &&
      finished_count_ * 10 >= next_progress_ * static_cast<int64_t>(requests_.size())) {
    options_.sim.progress(fmt::format("served {}/{} requests", finished_count_, requests_.size()));
    ++next_progress_;
  }
  dirty_[index] = true;
  return Status::Ok();
}

// A KV flow completes, or caches arrive at their decode instances.
void ServingRun::ArriveKvCaches() {
  arrived_.clear();
  kv_network_->AdvanceTo(now_, &arrived_);
  for (int64_t id : arrived_) {
    ServedRequest& r = requests_[static_cast<size_t>(id)];
    r.kv_arrival = now_;
    replicas_[r.engine].scheduler.AddWithCache(&r);
    dirty_[r.engine] = true;
  }
}

// The next pending request arrives now and is routed (or rejected).
void ServingRun::Arrive() {
  ServedRequest& r = requests_[pending_.front()];
  first_arrival_ = std::min(first_arrival_, r.arrival);
  pending_.pop_front();
  const size_t target = Route(0, entry_replicas_);
  r.replica = static_cast<int64_t>(replicas_[target].group);
  r.engine = static_cast<int64_t>(target);
  // A decode-only request also caches the token it feeds first: context + output.
  const int64_t context = r.decode_only ? r.prompt + 1 : r.prompt;
  const bool fits = entry_replicas_ == replicas_.size()
                        ? replicas_[target].scheduler.CanEverFit(context, r.output)
                        : replicas_[target].scheduler.CanEverFit(r.prompt, 1) &&
                              replicas_[entry_replicas_].scheduler.CanEverFit(r.prompt, r.output);
  if (!fits) {
    r.rejected = true;
    if (closed_) Issue(now_, true);
    return;
  }
  ++in_system_;
  // A decode-only request's context is in its KV cache already: admitted with
  // those blocks, it decodes. Prefix-cache hits are computed already but hold
  // their blocks from admission on.
  r.computed = r.decode_only ? r.prompt : r.cached;
  Deliver(target, &r, r.decode_only);
  dirty_[target] = true;
}

void ServingRun::Deliver(size_t index, ServedRequest* r, bool cached) {
  Replica& rep = replicas_[index];
  // SGLang's event_loop_overlap receives requests, then schedules and launches
  // batch N + 1 before it waits for batch N: a request reaching it while an
  // iteration runs (or as one ends and the next is launched at that instant)
  // is first scheduled into the iteration after the next. With no batch in
  // flight it is taken at once. Arrivals keep their order.
  const bool launched = rep.busy || (rep.ended_at == now_ && rep.continues);
  const bool wait = overlap_ && (launched || !rep.inbox.empty());
  rep.inbox.emplace_back(r, cached);
  if (!wait) TakeInbox(index);
}

void ServingRun::TakeInbox(size_t index) {
  Replica& rep = replicas_[index];
  for (const auto& [r, cached] : rep.inbox) {
    if (cached) {
      rep.scheduler.AddWithCache(r);
    } else {
      rep.scheduler.Add(r);
    }
  }
  rep.inbox.clear();
}

StatusOr<ServingResult> ServingRun::Run() {
  RETURN_IF_ERROR(spec_.disaggregation ? BuildDisaggregated() : BuildColocated());
  result_.calibration_source = costs_[0]->calibration_source();
  // The calibration's and the engine's serving path (spec.path, 0 without `engine:`).
  request_overhead_ = costs_[0]->terms().request_overhead + spec_.path.request;
  // SGLang's disaggregated instances run non-overlapped loops
  // (event_loop_normal_disagg_prefill / _decode, v0.4.5).
  overlap_ = spec_.scheduler.overlap_schedule && !spec_.disaggregation;
  result_.terms = sim::ActiveTerms(e_, costs_[0]->calibration());
  DrawRequests();
  occ_.replicas = result_.replicas;
  for (const Replica& rep : replicas_) occ_.kv_blocks_total += rep.scheduler.total_blocks();
  // Everything that happens at one instant (arrivals, iteration ends) is
  // handled before idle replicas schedule, so requests arriving together can
  // share an iteration; a closed loop's refills at that instant come after
  // (they share the one after, or the idle replica's next).
  dirty_.assign(replicas_.size(), false);
  while (true) {
    // A request reaches the scheduler request_overhead after it arrives.
    const double next_arrival =
        pending_.empty() ? kNever : requests_[pending_.front()].arrival + request_overhead_;
    const double next_transfer = kv_network_ ? kv_network_->Next() : kNever;
    // A closed loop's refill reaches the engine only after the iteration that
    // starts at its predecessor's finish was launched: the last token must
    // reach the client and the new request come back, while the engine's loop
    // launches its next iteration at once (TensorRT-LLM's executionLoop:
    // forwardSync, responses enqueued, fetchNewRequests, forwardAsync). So
    // idle replicas schedule before refills arriving at this instant.
    const bool refill_waits =
        next_arrival <= now_ && closed_ && refill_[pending_.front()] && scheduled_at_ < now_;
    bool more_now = (next_arrival <= now_ && !refill_waits) || next_transfer <= now_;
    for (const Replica& rep : replicas_) more_now = more_now || (rep.busy && rep.end <= now_);
    if (!more_now) {
      RETURN_IF_ERROR(StartIdleReplicas());
      scheduled_at_ = now_;
    }
    size_t next_rep = replicas_.size();
    for (size_t i = 0; i < replicas_.size(); ++i) {
      if (replicas_[i].busy &&
          (next_rep == replicas_.size() || replicas_[i].end < replicas_[next_rep].end)) {
        next_rep = i;
      }
    }
    const double next_end = next_rep < replicas_.size() ? replicas_[next_rep].end : kNever;
    if (next_arrival == kNever && next_end == kNever && next_transfer == kNever) break;
    if (next_end <= next_arrival && next_end <= next_transfer) {
      // An iteration ends (before an arrival at the same instant).
      Advance(next_end);
      RETURN_IF_ERROR(EndIteration(next_rep));
    } else if (next_transfer <= next_arrival) {
      Advance(next_transfer);
      ArriveKvCaches();
    } else {
      Advance(next_arrival);
      Arrive();
    }
  }
  occ_.span = first_arrival_ == kNever ? 0 : last_finish_ - first_arrival_;
  result_.end = last_finish_;
  for (const auto& c : costs_) {
    result_.programs_simulated += c->programs_simulated();
    result_.ops_simulated += c->ops_simulated();
  }
  result_.metrics =
      ComputeServingMetrics(requests_, std::move(itl_), occ_, spec_.slo, result_.devices);
  if (options_.sim.write_trace) {
    std::vector<std::pair<int64_t, int32_t>> engines;  // (replica, virtual engine) per scheduler
    for (const Replica& rep : replicas_) engines.emplace_back(rep.group, rep.engine);
    RETURN_IF_ERROR(WriteTrace(e_, placement_, result_, engines, requests_, records_, options_,
                               &result_.trace_path, &result_.metadata_path));
  }
  if (options_.keep_requests) result_.requests = std::move(requests_);
  return std::move(result_);
}

}  // namespace

StatusOr<ServingResult> SimulateServing(const Experiment& e, const ServeOptions& options) {
  if (!e.serving) return InvalidArgument("experiment '{}' has no served workload", e.name);
  ASSIGN_OR_RETURN(Placement placement, Placement::Create(e));
  ServingRun run(e, options, std::move(placement));
  return run.Run();
}

}  // namespace shardscope::serve
