#include "calibrate/comm_fit.h"

#include <gtest/gtest.h>

#include <cmath>

namespace shardscope::calibrate {
namespace {

TEST(CommFitTest, RecoversLatencyAndBandwidth) {
  // t = 5 µs + S / 10 GB/s.
  std::vector<MessageSample> s;
  for (double bytes : {1e3, 1e4, 1e5, 1e6, 1e7}) s.push_back({bytes, 5e-6 + bytes / 1e10, 4});
  const LinkFit fit = FitLink(s);
  EXPECT_TRUE(fit.latency_known);
  EXPECT_NEAR(fit.latency, 5e-6, 1e-12);
  EXPECT_NEAR(fit.algbw, 1e10, 1e10 * 1e-9);
  EXPECT_LT(fit.rms_relative, 1e-9);
}

TEST(CommFitTest, OneSizeFoldsLatencyIntoBandwidth) {
  const LinkFit fit = FitLink({{4096, 2e-6, 10}});
  EXPECT_FALSE(fit.latency_known);
  EXPECT_DOUBLE_EQ(fit.latency, 0);
  EXPECT_NEAR(fit.algbw, 4096 / 2e-6, 1e-3);
}

TEST(CommFitTest, RobustFitIgnoresAnOutlyingSize) {
  // t = 20 µs + S / 200 GB/s at 8 B … 8 GiB (×4), the first size a warm-up
  // row at 3× its time and the third size too: least squares on relative
  // errors is pulled off the latency by them; the Huber fit is not.
  std::vector<MessageSample> s;
  for (double bytes = 8; bytes <= 8.0 * (1 << 30); bytes *= 4) {
    s.push_back({bytes, 20e-6 + bytes / 200e9, 1});
  }
  s[0].seconds *= 3;
  s[2].seconds *= 3;
  const LinkFit plain = FitLink(s);
  const LinkFit robust = FitLinkRobust(s);
  EXPECT_GT(std::abs(plain.latency - 20e-6), 0.8e-6);
  EXPECT_NEAR(robust.latency, 20e-6, 0.2e-6);
  EXPECT_NEAR(robust.algbw, 200e9, 2e9);
}

TEST(CommFitTest, NoUsableSample) {
  EXPECT_EQ(FitLink({{0, 1e-6, 1}}).algbw, 0);
  EXPECT_EQ(FitLink({}).algbw, 0);
}

}  // namespace
}  // namespace shardscope::calibrate
