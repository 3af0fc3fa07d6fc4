// A build without protobuf names what is missing when given an XSpace.
#include <gtest/gtest.h>

#include "importers/xspace_importer.h"
#include "trace/trace.h"

namespace shardscope::importers {
namespace {

TEST(XspaceImporterDisabledTest, SaysItWasBuiltWithoutProtobuf) {
  EXPECT_FALSE(XspaceImporterBuilt());
  trace::Trace t;
  trace::TraceBuilder sink(&t);
  auto r = ImportXspace("run.xplane.pb", &sink);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("run.xplane.pb"), std::string::npos);
  EXPECT_NE(r.status().message().find("SHARDSCOPE_WITH_PROTOBUF=OFF"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::importers
