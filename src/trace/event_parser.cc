#include "trace/event_parser.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <system_error>
#include <vector>

#include "trace/json_value.h"
#include "trace/plain_json.h"
#include "trace/trace_reader.h"

namespace shardscope::trace {

namespace impl {
namespace od = simdjson::ondemand;
#include "trace/event_parser_impl.inc"
}  // namespace impl

std::unique_ptr<EventParser> MakeEventParser(TraceSink* sink, ReadStats* stats) {
  return std::make_unique<impl::Parser>(sink, stats);
}

std::string_view EventParserImplementation() {
  return SIMDJSON_STRINGIFY(SIMDJSON_BUILTIN_IMPLEMENTATION);
}

}  // namespace shardscope::trace
