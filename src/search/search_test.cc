#include "search/search.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/yaml_reader.h"
#include "plan/placement.h"
#include "plan/plan_loader.h"
#include "report/plan_report.h"
#include "search/search_report.h"
#include "testing/scratch_dir.h"

namespace shardscope::search {
namespace {

namespace fs = std::filesystem;

// Writes `text` as an experiments file and loads experiment `name` for search.
SearchInput Load(const std::string& text, const std::string& name = "s") {
  testing::ScratchDir scratch("search_test");
  const std::string p = scratch.File("exp.yaml");
  std::ofstream(p) << text;
  auto in = LoadSearchInput(p, name);
  EXPECT_TRUE(in.ok()) << in.status().message();
  if (!in.ok()) std::abort();
  return *in;
}

// Llama-3.1-70B (about 141 GB of bf16 weights) on GPUs of 48 GB: only tp ≥ 4 holds it.
const char* kFitsOnlyAtTp4 = R"(
experiments:
  - name: s
    model: llama-3.1-70b
    hardware: {base: h100-sxm, nodes: 1, device: {memory_gb: 48}}
    batch_size: 4
    sequence_length: 128
    tokens_to_generate: 4
    search: {tp: [1, 2, 4, 8], pp: [1], sp: [1], dp: [1], batch_sizes: [4], max_devices: 4}
)";

TEST(SearchSpecTest, ReadsTheSearchBlockAndNamesBadFields) {
  SearchInput in = Load(kFitsOnlyAtTp4);
  EXPECT_EQ(in.experiment.model.name, "llama-3.1-70b");
  EXPECT_EQ(in.spec.tp, (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(in.spec.max_devices, 4);
  auto bad = SearchSpecFromYaml(YAML::Load("{tp: [0]}"), YamlContext{"f.yaml", "s", "search"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("search.tp"), std::string::npos) << bad.status().message();
  auto typo = SearchSpecFromYaml(YAML::Load("{tpp: [1]}"), YamlContext{"f.yaml", "s", "search"});
  ASSERT_FALSE(typo.ok());
  auto obj =
      SearchSpecFromYaml(YAML::Load("{objective: speed}"), YamlContext{"f.yaml", "s", "search"});
  ASSERT_FALSE(obj.ok());
  EXPECT_NE(obj.status().message().find("unknown objective 'speed'"), std::string::npos);
}

TEST(CandidateTest, EnumeratesWithinTheBudgetInOneOrder) {
  SearchInput in = Load(R"(
experiments:
  - name: s
    model: tiny-dense
    hardware: local-cpu
    batch_size: 4
    sequence_length: 64
    search: {batch_sizes: [4]}
)");
  // Budget 2 devices, dense: (tp, pp, sp, dp) with product ≤ 2, pp ≤ 2 layers:
  // single; dp2; sp2 × 3 ring variants; pp2 × micro-batches {1, 2, 4}; tp2 → 1+1+3+3+1 = 9.
  std::vector<std::string> labels;
  int64_t n = EnumerateCandidates(in.experiment, in.spec, [&](const Candidate& c) {
    EXPECT_EQ(c.index, static_cast<int64_t>(labels.size()));
    EXPECT_LE(c.devices(), 2);
    labels.push_back(PlanLabel(c));
    return true;
  });
  EXPECT_EQ(n, 9);
  EXPECT_EQ(labels.front(), "single b4");
  EXPECT_NE(std::find(labels.begin(), labels.end(), "sp2 stripe b4"), labels.end());
  EXPECT_NE(std::find(labels.begin(), labels.end(), "pp2 mb4 b4"), labels.end());
  std::vector<std::string> again;
  EnumerateCandidates(in.experiment, in.spec, [&](const Candidate& c) {
    again.push_back(PlanLabel(c));
    return true;
  });
  EXPECT_EQ(labels, again);
}

TEST(CandidateTest, MeshOrdersPutEachActiveDimensionInnermost) {
  SearchInput in = Load(R"(
experiments:
  - name: s
    model: tiny-dense
    hardware: {base: local-cpu, devices_per_node: 4}
    batch_size: 4
    sequence_length: 64
    search: {tp: [2], pp: [1], sp: [1], dp: [2], batch_sizes: [4]}
)");
  std::vector<std::string> labels;
  EnumerateCandidates(in.experiment, in.spec, [&](const Candidate& c) {
    labels.push_back(PlanLabel(c));
    return true;
  });
  EXPECT_EQ(labels, (std::vector<std::string>{"tp2·dp2 b4", "tp2·dp2 [dp,tp] b4"}));
}

TEST(SearchTest, FindsTheOnlyPlanThatFits) {
  SearchInput in = Load(kFitsOnlyAtTp4);
  auto r = RunSearch(in.experiment, in.spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->enumerated, 3);  // tp 1, 2, 4 (tp8 exceeds the budget of 4)
  EXPECT_EQ(r->counts[static_cast<int>(Outcome::kNoMemoryFit)], 2);
  EXPECT_EQ(r->counts[static_cast<int>(Outcome::kSimulated)], 1);
  ASSERT_NE(r->best(), nullptr);
  EXPECT_EQ(r->best()->candidate.parallel.tp, 4);
  EXPECT_GT(r->best()->figures.per_gpu, 0);
  EXPECT_LE(r->best()->figures.per_gpu, r->best()->figures.bound_per_gpu);
}

// A decode-bound workload where expert parallelism beats tensor parallelism, worked
// out by hand. Mixtral-8x7B (bf16): experts 8 × 32 layers × 3·4096·14336 params = 90.2 GB,
// attention 32 × 41.9 M params = 2.7 GB, embedding + head 0.5 GB: 93.4 GB, more than one
// 80 GB GPU. Four GPUs, each in its own host on 2.5 Gbit/s Ethernet (0.3125 GB/s per
// direction), 64 requests decoding at a 128-token context:
//  - tp4 all-reduces the 64 × 4096 bf16 activations (524 kB) twice per layer; a ring sends
//    2 · 3/4 of it per rank: ≥ 2 · 32 · 786 kB / 0.3125 GB/s = 161 ms per token on the
//    network alone (a decode layer waits for its all-reduce);
//  - tp2 likewise sends 2 · 1/2 · 524 kB: ≥ 107 ms per token;
//  - ep4 serves 16 requests per GPU: each layer sends 3/4 of its 16 × 2 (top-2) token
//    copies (8 kB each) out and back, 2 · 196.6 kB → 40.3 ms per token at full link speed,
//    and reads its 2 experts and the replicated rest, 25.7 GB, at 3.35 TB/s: 7.7 ms. Even
//    at half the peak of both, ep4 takes ≤ 96 ms, less than tp2's and tp4's floors.
// So the best TPOT is ep4's.
TEST(SearchTest, ExpertParallelismBeatsTensorParallelismOnASlowNetwork) {
  SearchInput in = Load(R"(
experiments:
  - name: s
    model: mixtral-8x7b
    hardware:
      base: h100-sxm
      nodes: 4
      devices_per_node: 1
      scale_up: {domain_size: 1}
      scale_out: {nic_gbit_s: 2.5}
    batch_size: 64
    sequence_length: 128
    tokens_to_generate: 4
    search: {tp: [1, 2, 4], ep: [1, 4], pp: [1], sp: [1], dp: [1], batch_sizes: [64],
             objective: tpot}
)");
  auto r = RunSearch(in.experiment, in.spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::map<std::string, const Evaluation*> by_label;
  for (const Evaluation& e : r->evaluations) by_label[PlanLabel(e.candidate)] = &e;
  ASSERT_EQ(by_label.size(), 4u);  // single, tp2, tp4, ep4 (the rest exceed 4 devices)
  EXPECT_EQ(by_label["single b64"]->outcome, Outcome::kNoMemoryFit);
  EXPECT_GT(by_label["single b64"]->figures.memory_peak, 93.4e9);
  for (const char* plan : {"tp2 b64", "tp4 b64", "ep4 b64"}) {
    ASSERT_EQ(by_label[plan]->outcome, Outcome::kSimulated) << plan;
  }
  EXPECT_GE(by_label["tp2 b64"]->figures.tpot, 0.107);
  EXPECT_GE(by_label["tp4 b64"]->figures.tpot, 0.161);
  EXPECT_LE(by_label["ep4 b64"]->figures.tpot, 0.096);
  ASSERT_NE(r->best(), nullptr);
  EXPECT_EQ(PlanLabel(r->best()->candidate), "ep4 b64");
}

// A wider space: every plan the search simulates passes `check` (valid, fits),
// every rejected plan fails it for the reason the search gives.
TEST(SearchTest, ReportedPlansPassCheckAndRejectedOnesFailIt) {
  SearchInput in = Load(R"(
experiments:
  - name: s
    model: llama-3.1-70b
    hardware: {base: h100-sxm, nodes: 1, device: {memory_gb: 48}}
    batch_size: 8
    sequence_length: 98
    tokens_to_generate: 4
    search: {sp: [1, 2], dp: [1, 2], pp: [1, 2, 80], batch_sizes: [2, 8], orders: default}
)");
  auto r = RunSearch(in.experiment, in.spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  int64_t checked[kNumOutcomes] = {};
  for (const Evaluation& e : r->evaluations) {
    const Experiment x = CandidateExperiment(in.experiment, e.candidate);
    ++checked[static_cast<int>(e.outcome)];
    switch (e.outcome) {
      case Outcome::kInvalidPlan: {
        Status s = ValidateExperiments({x});
        ASSERT_FALSE(s.ok()) << PlanLabel(e.candidate);
        EXPECT_EQ(s.message(), e.reason);
        break;
      }
      case Outcome::kNoMemoryFit: {
        auto check = BuildCheckReport(x);
        ASSERT_TRUE(check.ok()) << check.status().message();
        EXPECT_FALSE(check->memory.Fits()) << PlanLabel(e.candidate);
        EXPECT_DOUBLE_EQ(check->memory.Peak().total(), e.figures.memory_peak);
        break;
      }
      case Outcome::kOverBudget:
        EXPECT_GT(e.candidate.devices(), 8);
        break;
      case Outcome::kSloBound:
        ADD_FAILURE() << "no SLO was set";
        break;
      case Outcome::kDominated:
      case Outcome::kSimulated: {
        auto check = BuildCheckReport(x);
        ASSERT_TRUE(check.ok()) << check.status().message();
        EXPECT_TRUE(check->memory.Fits()) << PlanLabel(e.candidate);
        EXPECT_LE(e.candidate.devices(), 8);
        if (e.outcome == Outcome::kSimulated) {
          EXPECT_GE(e.figures.ttft, e.figures.bound_ttft * (1 - 1e-9));
        }
        break;
      }
    }
  }
  // The space exercises every rule but the SLO.
  EXPECT_GT(checked[static_cast<int>(Outcome::kInvalidPlan)],
            0);  // sp2 zigzag: 96 % 4 == 0, but pp80 > layers…
  EXPECT_GT(checked[static_cast<int>(Outcome::kOverBudget)], 0);
  EXPECT_GT(checked[static_cast<int>(Outcome::kNoMemoryFit)], 0);
  EXPECT_GT(checked[static_cast<int>(Outcome::kSimulated)], 0);
  // The front: no plan on it is beaten on both axes by any simulated plan.
  for (int64_t i : r->pareto) {
    for (int64_t j : r->ranked) {
      const Figures &a = r->evaluations[i].figures, &b = r->evaluations[j].figures;
      EXPECT_FALSE(b.per_gpu >= a.per_gpu && b.per_user >= a.per_user &&
                   (b.per_gpu > a.per_gpu || b.per_user > a.per_user));
    }
  }
  ASSERT_FALSE(r->ranked.empty());
  for (size_t k = 1; k < r->ranked.size(); ++k) {
    EXPECT_GE(r->evaluations[r->ranked[k - 1]].figures.per_gpu,
              r->evaluations[r->ranked[k]].figures.per_gpu);
  }
}

TEST(SearchTest, NoValidPlanNamesTheRuleThatRemovedTheLast) {
  SearchInput in = Load(R"(
experiments:
  - name: s
    model: llama-3.1-70b
    hardware: {base: h100-sxm, nodes: 1, device: {memory_gb: 8}}
    batch_size: 4
    sequence_length: 128
    search: {pp: [1], sp: [1], dp: [1], batch_sizes: [4]}
)");
  auto r = RunSearch(in.experiment, in.spec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("experiment 's': no valid plan among 4 candidates"),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("the memory rule removed the last 4"), std::string::npos)
      << r.status().message();
}

TEST(SearchTest, RefusesASpaceOverTheLimitBeforeEvaluatingAny) {
  SearchInput in = Load(kFitsOnlyAtTp4);
  in.spec.max_candidates = 2;
  bool called = false;
  auto r = RunSearch(
      in.experiment, in.spec,
      [&](const std::vector<Evaluation>&, const Step&) -> StatusOr<std::vector<Evaluation>> {
        called = true;
        return std::vector<Evaluation>{};
      });
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(called);
  EXPECT_NE(r.status().message().find("holds 3 candidate plans, more than the limit of 2"),
            std::string::npos)
      << r.status().message();
}

TEST(SearchTest, AnUnmetSloListsTheClosestPlans) {
  SearchInput in = Load(kFitsOnlyAtTp4);
  in.spec.max_devices = 8;
  in.spec.slo.tpot_ms = 1e-3;  // 1 µs: no plan can
  auto r = RunSearch(in.experiment, in.spec);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->ranked.empty());
  ASSERT_FALSE(r->closest.empty());
  EXPECT_EQ(r->counts[static_cast<int>(Outcome::kSloBound)], 2);  // tp4, tp8
  std::string msg = SloMissMessage(*r);
  EXPECT_NE(msg.find("no plan meets TPOT ≤ 0.001 ms"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tp8 b4"), std::string::npos) << msg;  // the closest by its bound
}

TEST(SearchTest, TheSameWhateverOrderCandidatesAreEvaluatedIn) {
  SearchInput in = Load(kFitsOnlyAtTp4);
  in.spec.max_devices = 8;
  in.spec.batch_sizes = {1, 2, 4};
  auto forward = RunSearch(in.experiment, in.spec);
  auto backward = RunSearch(in.experiment, in.spec,
                            [](const std::vector<Evaluation>& inputs,
                               const Step& step) -> StatusOr<std::vector<Evaluation>> {
                              std::vector<Evaluation> out(inputs.size());
                              for (size_t i = inputs.size(); i-- > 0;) {
                                ASSIGN_OR_RETURN(out[i], step(inputs[i]));
                              }
                              return out;
                            });
  ASSERT_TRUE(forward.ok() && backward.ok());
  EXPECT_EQ(SearchReportText(*forward), SearchReportText(*backward));
  EXPECT_EQ(SearchReportCsv(*forward), SearchReportCsv(*backward));
}

TEST(EvaluationTest, JsonRoundTripKeepsEveryBit) {
  SearchInput in = Load(kFitsOnlyAtTp4);
  auto r = RunSearch(in.experiment, in.spec);
  ASSERT_TRUE(r.ok());
  for (const Evaluation& e : r->evaluations) {
    auto back = EvaluationFromJson(nlohmann::json::parse(EvaluationToJson(e).dump()));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(EvaluationToJson(*back).dump(), EvaluationToJson(e).dump());
    EXPECT_EQ(back->figures.per_gpu, e.figures.per_gpu);
  }
  EXPECT_FALSE(EvaluationFromJson(nlohmann::json{{"index", 0}}).ok());
}

TEST(SearchReportTest, TheBestPlanIsAReadyExperiment) {
  SearchInput in = Load(kFitsOnlyAtTp4);
  auto r = RunSearch(in.experiment, in.spec);
  ASSERT_TRUE(r.ok());
  auto yaml = BestPlanYaml(*r, in.experiment_yaml);
  ASSERT_TRUE(yaml.ok()) << yaml.status().message();
  testing::ScratchDir scratch("search_best");
  const std::string p = scratch.File("best.yaml");
  std::ofstream(p) << *yaml;
  auto loaded = LoadValidExperiments(p);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message() << "\n" << *yaml;
  ASSERT_EQ(loaded->size(), 1u);
  const Experiment& e = loaded->front();
  EXPECT_EQ(e.name, "s_best");
  EXPECT_EQ(e.parallel.tp, 4);
  EXPECT_EQ(e.workload.batch_size, 4);
  EXPECT_EQ(e.model.name, "llama-3.1-70b");
  EXPECT_EQ(e.cluster.device.memory_bytes, in.experiment.cluster.device.memory_bytes);
  std::string text = SearchReportText(*r);
  EXPECT_NE(text.find("Best: tp4 b4 on 4 devices"), std::string::npos) << text;
}

}  // namespace
}  // namespace shardscope::search
