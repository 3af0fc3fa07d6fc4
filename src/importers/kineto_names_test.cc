#include "importers/kineto_names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shardscope::importers {
namespace {

using trace::Collective;

TEST(KinetoRulesTest, CommKernelNames) {
  Collective c;
  EXPECT_TRUE(IsCommKernelName(
      "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", &c));
  EXPECT_EQ(c, Collective::kAllReduce);
  EXPECT_TRUE(
      IsCommKernelName("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", &c));
  EXPECT_EQ(c, Collective::kAllGather);
  EXPECT_TRUE(IsCommKernelName("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", &c));
  EXPECT_EQ(c, Collective::kNone);  // the name says nothing
  EXPECT_TRUE(IsCommKernelName("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)", &c));
  EXPECT_EQ(c, Collective::kNone);  // point-to-point or all-to-all
  EXPECT_TRUE(IsCommKernelName(
      "void vllm::cross_device_reduce_2stage<__nv_bfloat16, 8>(vllm::RankData*, int)", &c));
  EXPECT_EQ(c, Collective::kAllReduce);
  EXPECT_TRUE(IsCommKernelName("void ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL()", &c));
  EXPECT_EQ(c, Collective::kReduceScatter);
  EXPECT_FALSE(IsCommKernelName("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn", &c));
  EXPECT_FALSE(IsCommKernelName("void at::native::vectorized_elementwise_kernel<4>()", &c));
}

TEST(KinetoRulesTest, PytorchCollectiveNames) {
  EXPECT_EQ(CollectiveFromPytorchName("allreduce"), Collective::kAllReduce);
  EXPECT_EQ(CollectiveFromPytorchName("_allgather_base"), Collective::kAllGather);
  EXPECT_EQ(CollectiveFromPytorchName("all_gather_into_tensor_coalesced"), Collective::kAllGather);
  EXPECT_EQ(CollectiveFromPytorchName("reduce_scatter_tensor_coalesced"),
            Collective::kReduceScatter);
  EXPECT_EQ(CollectiveFromPytorchName("all_to_allv"), Collective::kAllToAll);
  EXPECT_EQ(CollectiveFromPytorchName("nccl:all_to_all"), Collective::kAllToAll);
  EXPECT_EQ(CollectiveFromPytorchName("c10d::alltoall_base_"), Collective::kAllToAll);
  EXPECT_EQ(CollectiveFromPytorchName("nccl:send 0->1"), Collective::kSend);
  EXPECT_EQ(CollectiveFromPytorchName("broadcast"), Collective::kBroadcast);
  EXPECT_EQ(CollectiveFromPytorchName("barrier"), Collective::kNone);
  EXPECT_EQ(CollectiveFromPytorchName("reduce"), Collective::kNone);
  EXPECT_EQ(CollectiveFromPytorchName("frobnicate"), std::nullopt);
}

TEST(KinetoRulesTest, DtypesAndRankLists) {
  std::string ours;
  EXPECT_EQ(KinetoDtypeSize("Float", &ours), 4);
  EXPECT_EQ(ours, "fp32");
  EXPECT_EQ(KinetoDtypeSize("BFloat16", &ours), 2);
  EXPECT_EQ(ours, "bf16");
  EXPECT_EQ(KinetoDtypeSize("Float8_e4m3fn"), 1);
  EXPECT_EQ(KinetoDtypeSize("Long"), 8);
  EXPECT_EQ(KinetoDtypeSize("Quaternion", &ours), 0);
  std::vector<int64_t> r;
  bool truncated = true;
  ASSERT_TRUE(ParseRankList("[0, 1, 2]", &r, &truncated));
  EXPECT_EQ(r, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_FALSE(truncated);
  ASSERT_TRUE(ParseRankList("[]", &r, &truncated));
  EXPECT_TRUE(r.empty());
  ASSERT_TRUE(ParseRankList("[0, 8, 16, ..., ]", &r, &truncated));
  EXPECT_TRUE(truncated);
  EXPECT_EQ(r, (std::vector<int64_t>{0, 8, 16}));
  EXPECT_FALSE(ParseRankList("[0, x]", &r, &truncated));
  EXPECT_FALSE(ParseRankList("0, 1", &r, &truncated));
}

TEST(KinetoRulesTest, CategoriesAndHostRoles) {
  using kineto::HostRole;
  using kineto::Kind;
  using kineto::StepSource;
  EXPECT_EQ(kineto::KindOfCat("kernel"), Kind::kKernel);
  EXPECT_EQ(kineto::KindOfCat("gpu_memcpy"), Kind::kGpuOther);
  EXPECT_EQ(kineto::KindOfCat("cuda_runtime"), Kind::kRuntime);
  EXPECT_EQ(kineto::KindOfCat("user_annotation"), Kind::kHostOp);
  EXPECT_EQ(kineto::KindOfCat("python_function"), Kind::kPython);
  EXPECT_EQ(kineto::KindOfCat("kernels"), Kind::kIgnore);
  EXPECT_EQ(kineto::KindOfCat(""), Kind::kIgnore);
  StepSource step = StepSource::kVllmExecute;
  EXPECT_EQ(kineto::RoleOfHostName("ProfilerStep#3", Kind::kHostOp, "user_annotation", &step),
            HostRole::kStep);
  EXPECT_EQ(step, StepSource::kProfilerStep);
  EXPECT_EQ(kineto::RoleOfHostName("execute_model", Kind::kHostOp, "user_annotation", &step),
            HostRole::kStep);
  EXPECT_EQ(step, StepSource::kVllmExecute);
  EXPECT_EQ(kineto::RoleOfHostName("execute_model", Kind::kHostOp, "cpu_op", &step),
            HostRole::kNone);
  EXPECT_EQ(kineto::RoleOfHostName("sched.py(10): run_batch", Kind::kPython, "", &step),
            HostRole::kStep);
  EXPECT_EQ(step, StepSource::kSglangRunBatch);
  EXPECT_EQ(kineto::RoleOfHostName("record_param_comms", Kind::kHostOp, "cpu_op", &step),
            HostRole::kComm);
  EXPECT_EQ(kineto::RoleOfHostName("nccl:all_reduce", Kind::kHostOp, "cpu_op", &step),
            HostRole::kComm);
  EXPECT_EQ(kineto::RoleOfHostName("aten::mm", Kind::kHostOp, "cpu_op", &step), HostRole::kGemm);
  EXPECT_EQ(kineto::RoleOfHostName("aten::addmm", Kind::kHostOp, "cpu_op", &step), HostRole::kGemm);
  // A composite op: its shape is its inner mm's.
  EXPECT_EQ(kineto::RoleOfHostName("aten::linear", Kind::kHostOp, "cpu_op", &step),
            HostRole::kNone);
  EXPECT_EQ(kineto::RoleOfHostName("aten::add", Kind::kHostOp, "cpu_op", &step), HostRole::kNone);
  EXPECT_EQ(kineto::DimOfDescription("mesh_tp"), Dim::kTp);
  EXPECT_EQ(kineto::DimOfDescription("default_pg"), Dim::kNone);
}

}  // namespace
}  // namespace shardscope::importers
