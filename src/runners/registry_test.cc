#include "runners/registry.h"

#include <gtest/gtest.h>

namespace shardscope::runners {
namespace {

TEST(RegistryTest, CreatesSimAndCpuByName) {
  for (std::string_view name : {"sim", "cpu"}) {
    auto b = CreateRunner(name, run::RunOptions{});
    ASSERT_TRUE(b.ok()) << name << ": " << b.status().message();
    EXPECT_EQ((*b)->name(), name);
  }
}

TEST(RegistryTest, CudaIsKnownButNotBuilt) {
  auto b = CreateRunner("cuda", run::RunOptions{});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(b.status().message().find("built without CUDA backend; see issue 14"),
            std::string::npos)
      << b.status().message();
}

TEST(RegistryTest, AnUnknownNameListsTheKnownOnes) {
  auto b = CreateRunner("tpu", run::RunOptions{});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("'tpu'"), std::string::npos);
  EXPECT_NE(b.status().message().find("sim, cpu, cuda"), std::string::npos) << b.status().message();
}

TEST(RegistryTest, TheSimulatorChecksItsOptions) {
  run::RunOptions o;
  o.allreduce = "butterfly";
  auto b = CreateRunner("sim", o);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("butterfly"), std::string::npos) << b.status().message();
}

}  // namespace
}  // namespace shardscope::runners
