// The XSpace importer of a build without protobuf (SHARDSCOPE_WITH_PROTOBUF=OFF):
// it says so instead of reading. CMake compiles this file in place of
// xspace_importer.cc.
#include "importers/xspace_importer.h"

namespace shardscope::importers {
namespace {

Status NotBuilt(const std::string& name) {
  return Unimplemented(
      "{}: XLA XSpace (.xplane.pb) traces need protobuf, and this build has none "
      "(configured with -DSHARDSCOPE_WITH_PROTOBUF=OFF); rebuild with it, or convert the profile "
      "to trace-viewer JSON (xprof), which this build reads",
      name);
}

}  // namespace

bool XspaceImporterBuilt() { return false; }

StatusOr<std::vector<XlaDevice>> DecodeXspace(std::string_view data, const std::string& name,
                                              trace::ReadStats* stats) {
  return NotBuilt(name);
}

StatusOr<trace::ReadStats> ImportXspace(const std::string& path, trace::TraceSink* sink) {
  return NotBuilt(path);
}

}  // namespace shardscope::importers
