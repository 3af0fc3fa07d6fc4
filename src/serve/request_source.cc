#include "serve/request_source.h"

#include <algorithm>
#include <cmath>

namespace shardscope::serve {

int64_t DrawLength(const LengthDist& d, std::mt19937_64& rng) {
  double v = 0;
  switch (d.kind) {
    case LengthDist::Kind::kFixed:
      return d.value;
    case LengthDist::Kind::kUniform:
      return std::uniform_int_distribution<int64_t>(d.min, d.max)(rng);
    case LengthDist::Kind::kNormal:
      v = std::normal_distribution<double>(d.mean, d.stddev)(rng);
      break;
    case LengthDist::Kind::kLognormal: {
      // Parameters of the underlying normal that give the length this mean and stddev.
      const double s2 = std::log1p(d.stddev * d.stddev / (d.mean * d.mean));
      v = std::lognormal_distribution<double>(std::log(d.mean) - s2 / 2, std::sqrt(s2))(rng);
      break;
    }
  }
  return std::clamp<int64_t>(std::llround(v), d.min, d.max);
}

std::vector<RequestSpec> MakeRequests(const ServingSpec& s, uint64_t seed) {
  std::vector<RequestSpec> out;
  const ArrivalSpec& a = s.arrivals;
  auto wanted = [&](double arrival) {
    if (s.requests > 0 && static_cast<int64_t>(out.size()) >= s.requests) return false;
    return s.duration <= 0 || arrival <= s.duration;
  };
  if (a.process == ArrivalProcess::kFile) {
    for (const RequestSpec& r : a.file_requests) {
      if (!wanted(r.arrival)) break;
      out.push_back(r);
    }
    return out;
  }
  // Separate streams for times and lengths: changing one leaves the other as it was.
  std::mt19937_64 time_rng(seed * 0x9E3779B97F4A7C15ULL + 1);
  std::mt19937_64 length_rng(seed * 0x9E3779B97F4A7C15ULL + 2);
  auto lengths = [&](RequestSpec* r) {
    r->prompt_tokens = DrawLength(s.prompt_tokens, length_rng);
    r->output_tokens = DrawLength(s.output_tokens, length_rng);
  };
  if (a.process == ArrivalProcess::kClosedLoop) {
    out.resize(static_cast<size_t>(s.requests));
    for (RequestSpec& r : out) lengths(&r);
    return out;
  }
  // Inter-arrival times: exponential (Poisson), or gamma with mean 1/rate and
  // coefficient of variation cv (shape 1/cv²): cv > 1 gives bursts.
  std::exponential_distribution<double> exponential(a.rate);
  const double shape = 1.0 / (a.cv * a.cv);
  std::gamma_distribution<double> gamma(shape, 1.0 / (a.rate * shape));
  double t = 0;
  while (true) {
    t += a.process == ArrivalProcess::kPoisson ? exponential(time_rng) : gamma(time_rng);
    if (!wanted(t)) break;
    RequestSpec r;
    r.arrival = t;
    lengths(&r);
    out.push_back(r);
  }
  return out;
}

}  // namespace shardscope::serve
