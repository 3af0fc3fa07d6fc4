// Rank spread: ranks of one run do not compute at the same speed (host noise,
// unequal shares of a shared memory bus, clocks), and synchronised work runs at
// the slowest one's pace. Modelled as a spread s of the ranks' compute time
// around their mean: rank r takes (1 + s·z_r) of the model's time, z_r the
// expected order statistics of the world's ranks drawn from a standard normal
// (Blom's approximation), so the ranks' mean stays the model's and the slowest
// of N runs s·z_N slower. Which rank is slow is a draw on real hardware; the
// simulator makes the last rank the slowest. `shardscope calibrate` fits s from
// the ranks' times on the same ops (OverheadTerms::rank_speed_spread).
#ifndef SHARDSCOPE_SIM_RANK_SPREAD_H_
#define SHARDSCOPE_SIM_RANK_SPREAD_H_

#include <cstdint>
#include <vector>

namespace shardscope::sim {

// Blom's approximation of the expected i-th smallest (i = 1..n) of n standard
// normal draws: Φ⁻¹((i − 3/8) / (n + 1/4)). 0 for n ≤ 1.
double NormalOrderScore(int64_t i, int64_t n);

// Each of `ranks` ranks' factor on its compute time, 1 + spread · z_r, the
// largest last; empty when spread is 0 or there is one rank.
std::vector<double> RankTimeScales(double spread, int64_t ranks);

}  // namespace shardscope::sim

#endif  // SHARDSCOPE_SIM_RANK_SPREAD_H_
