// gpu_ops_bench: measures, on one NVIDIA GPU, the op classes the simulator's
// compute model uses (docs/fidelity.md, "GPU"), and writes them as ShardScope
// traces that `shardscope calibrate` fits:
//   - GEMMs through cuBLASLt (bf16 and fp8 e4m3 inputs, fp32 accumulation,
//     bf16 output) over the n × k of our Programs (bench/gpu/shapes.csv, from
//     program_shapes.py) and rows m from 1 to 16 384;
//   - the memory-bound elementwise and gather ops (RMSNorm, SwiGLU, residual
//     add, RoPE, KV append, embedding), bf16, by our own simple kernels;
//   - the FP8 activation quantisation before an FP8 GEMM (amax, scale, cast);
//   - copy bandwidth (cudaMemcpy device to device, and a copy kernel), the
//     square GEMM peak, and launch costs (eager, CUDA graph).
// Kernel times are device times: each op is captured R times into a CUDA
// graph and the graph replayed between CUDA events, so host launch gaps are
// not in them (measured apart, in device.json). Weights and inputs rotate
// over copies larger than twice the L2 cache, so each op reads device memory
// as it does in a model's forward pass.
//
// Usage: gpu_ops_bench --shapes FILE --out DIR [--budget-s S] [--max-rows M]
// Writes DIR/gpu_ops.csv (every measurement), DIR/gpu_ops_bf16.trace and
// DIR/gpu_ops_fp8.trace (ShardScope traces) and DIR/device.json.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench/gpu/gpu_ops_trace.h"

namespace {

using Clock = std::chrono::steady_clock;
using bf16 = __nv_bfloat16;
using fp8 = __nv_fp8_e4m3;

// One check per library: a failure names the call and stops the bench (the
// results written so far stay in gpu_ops.csv).
#define CUDA_CHECK(call)                                                    \
  do {                                                                      \
    cudaError_t e_ = (call);                                                \
    if (e_ != cudaSuccess) {                                                \
      std::fprintf(stderr, "gpu_ops_bench: %s failed: %s (%s:%d)\n", #call, \
                   cudaGetErrorString(e_), __FILE__, __LINE__);             \
      std::exit(1);                                                         \
    }                                                                       \
  } while (0)
#define CUBLAS_CHECK(call)                                                         \
  do {                                                                             \
    cublasStatus_t s_ = (call);                                                    \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                             \
      std::fprintf(stderr, "gpu_ops_bench: %s failed: status %d (%s:%d)\n", #call, \
                   static_cast<int>(s_), __FILE__, __LINE__);                      \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

// ---- RAII handles.

struct DeviceBuffer {
  void* p = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) {
    CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 256)));
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(p);
  }
};

struct Event {
  cudaEvent_t e{};
  Event() { CUDA_CHECK(cudaEventCreate(&e)); }
  ~Event() { cudaEventDestroy(e); }
};

struct Graph {
  cudaGraph_t g = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~Graph() {
    if (exec) cudaGraphExecDestroy(exec);
    if (g) cudaGraphDestroy(g);
  }
};

// ---- Kernels.

__device__ inline float HashUniform(uint64_t i, uint32_t seed) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 31, x *= 0xBF58476D1CE4E5B9ull, x ^= x >> 29;
  return static_cast<float>(x >> 40) * (2.0f / 16777216.0f) - 1.0f;  // [-1, 1)
}

__global__ void FillBf16(bf16* p, int64_t n, uint32_t seed, float scale) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    p[i] = __float2bfloat16(HashUniform(i, seed) * scale);
}

__global__ void FillFp8(fp8* p, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    p[i] = fp8(HashUniform(i, seed));
}

__global__ void FillIds(int32_t* p, int64_t n, int32_t modulo, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    p[i] = static_cast<int32_t>((HashUniform(i, seed) + 1.0f) * 0.5f * (modulo - 1));
}

__global__ void EmptyKernel() {}

// 8 bf16 per 16-byte vector.
struct alignas(16) Vec8 {
  bf16 v[8];
};

// y = x / rms(x) · w, one block per row of h (h % 8 == 0).
__global__ void RmsNormKernel(const bf16* x, const bf16* w, bf16* y, int h) {
  const Vec8* xr = reinterpret_cast<const Vec8*>(x + int64_t{blockIdx.x} * h);
  Vec8* yr = reinterpret_cast<Vec8*>(y + int64_t{blockIdx.x} * h);
  const Vec8* wr = reinterpret_cast<const Vec8*>(w);
  float ss = 0;
  for (int i = threadIdx.x; i < h / 8; i += blockDim.x) {
    Vec8 a = xr[i];
    for (int j = 0; j < 8; ++j) ss += __bfloat162float(a.v[j]) * __bfloat162float(a.v[j]);
  }
  for (int o = 16; o > 0; o /= 2) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  __shared__ float warp_sums[32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = ss;
  __syncthreads();
  float total = 0;
  for (int i = 0; i < (blockDim.x + 31) / 32; ++i) total += warp_sums[i];
  const float inv = rsqrtf(total / h + 1e-6f);
  for (int i = threadIdx.x; i < h / 8; i += blockDim.x) {
    Vec8 a = xr[i], g = wr[i], out;
    for (int j = 0; j < 8; ++j)
      out.v[j] = __float2bfloat16(__bfloat162float(a.v[j]) * inv * __bfloat162float(g.v[j]));
    yr[i] = out;
  }
}

// out[r, :] = silu(gate[r, :]) · up[r, :] where row r of `gu` is [gate f | up f].
__global__ void SwiGluKernel(const bf16* gu, bf16* out, int64_t rows, int f) {
  const int64_t vecs = rows * (f / 8);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < vecs;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / (f / 8), c = i % (f / 8);
    const Vec8 g = reinterpret_cast<const Vec8*>(gu + r * 2 * f)[c];
    const Vec8 u = reinterpret_cast<const Vec8*>(gu + r * 2 * f + f)[c];
    Vec8 o;
    for (int j = 0; j < 8; ++j) {
      const float a = __bfloat162float(g.v[j]);
      o.v[j] = __float2bfloat16(a / (1.0f + __expf(-a)) * __bfloat162float(u.v[j]));
    }
    reinterpret_cast<Vec8*>(out)[i] = o;
  }
}

__global__ void AddKernel(const bf16* a, const bf16* b, bf16* out, int64_t vecs) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < vecs;
       i += int64_t{gridDim.x} * blockDim.x) {
    const Vec8 x = reinterpret_cast<const Vec8*>(a)[i], y = reinterpret_cast<const Vec8*>(b)[i];
    Vec8 o;
    for (int j = 0; j < 8; ++j) o.v[j] = __hadd(x.v[j], y.v[j]);
    reinterpret_cast<Vec8*>(out)[i] = o;
  }
}

// Half-split RoPE in place over rows × (heads · 128), position = row.
__global__ void RopeKernel(bf16* x, int64_t rows, int width) {
  constexpr int kHeadDim = 128;
  const int64_t pairs = rows * (width / 2);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < pairs;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / (width / 2);
    const int p = static_cast<int>(i % (width / 2));
    const int head = p / (kHeadDim / 2), j = p % (kHeadDim / 2);
    bf16* h = x + r * width + head * kHeadDim;
    float s, c;
    __sincosf(static_cast<float>(r) * __powf(500000.0f, -2.0f * j / kHeadDim), &s, &c);
    const float a = __bfloat162float(h[j]), b = __bfloat162float(h[j + kHeadDim / 2]);
    h[j] = __float2bfloat16(a * c - b * s);
    h[j + kHeadDim / 2] = __float2bfloat16(a * s + b * c);
  }
}

// cache[slot[r], :] = src[r, :], one block per row of w (w % 8 == 0).
__global__ void RowScatterKernel(const bf16* src, bf16* dst, const int32_t* slots, int w) {
  const Vec8* s = reinterpret_cast<const Vec8*>(src + int64_t{blockIdx.x} * w);
  Vec8* d = reinterpret_cast<Vec8*>(dst + int64_t{slots[blockIdx.x]} * w);
  for (int i = threadIdx.x; i < w / 8; i += blockDim.x) d[i] = s[i];
}

// out[r, :] = table[ids[r], :], one block per row of h.
__global__ void GatherKernel(const int32_t* ids, const bf16* table, bf16* out, int h) {
  const Vec8* s = reinterpret_cast<const Vec8*>(table + int64_t{ids[blockIdx.x]} * h);
  Vec8* d = reinterpret_cast<Vec8*>(out + int64_t{blockIdx.x} * h);
  for (int i = threadIdx.x; i < h / 8; i += blockDim.x) d[i] = s[i];
}

// FP8 activation quantisation with a per-tensor dynamic scale, the pass a
// serving stack runs before each FP8 GEMM: the amax of |x| over the tensor,
// then y = x · 448 / amax cast to e4m3. Two kernels: the first reads 2 bytes
// per element, the second reads 2 and writes 1.
__global__ void AmaxKernel(const bf16* x, int64_t vecs, unsigned* amax_bits) {
  const Vec8* xv = reinterpret_cast<const Vec8*>(x);
  float m = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < vecs;
       i += int64_t{gridDim.x} * blockDim.x) {
    const Vec8 a = xv[i];
    for (int j = 0; j < 8; ++j) m = fmaxf(m, fabsf(__bfloat162float(a.v[j])));
  }
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  // The block's maximum, then one atomic per block (one per warp would
  // serialise thousands of atomics on one address).
  __shared__ float warp_max[32];
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int i = 1; i < (blockDim.x + 31) / 32; ++i) m = fmaxf(m, warp_max[i]);
    // m ≥ 0, whose bit patterns order as the floats do.
    atomicMax(amax_bits, __float_as_uint(m));
  }
}

struct alignas(8) Fp8x8 {
  fp8 v[8];
};

__global__ void QuantKernel(const bf16* x, const unsigned* amax_bits, Fp8x8* y, int64_t vecs) {
  const float amax = __uint_as_float(*amax_bits);
  const float scale = amax > 0 ? 448.0f / amax : 1.0f;
  const Vec8* xv = reinterpret_cast<const Vec8*>(x);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < vecs;
       i += int64_t{gridDim.x} * blockDim.x) {
    const Vec8 a = xv[i];
    Fp8x8 out;
    for (int j = 0; j < 8; ++j) out.v[j] = fp8(__bfloat162float(a.v[j]) * scale);
    y[i] = out;
  }
}

__global__ void CopyKernel(const uint4* a, uint4* b, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    b[i] = a[i];
}

// ---- Options and output.

struct Options {
  std::string shapes, out;
  double budget_s = 300;
  int64_t max_rows = 16384;
};

void Usage(const char* msg) {
  std::fprintf(stderr,
               "gpu_ops_bench: %s\nusage: gpu_ops_bench --shapes FILE --out DIR [--budget-s S] "
               "[--max-rows M]\n",
               msg);
  std::exit(2);
}

Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) Usage(("missing value of " + a).c_str());
    const std::string v = argv[++i];
    if (a == "--shapes")
      o.shapes = v;
    else if (a == "--out")
      o.out = v;
    else if (a == "--budget-s")
      o.budget_s = std::atof(v.c_str());
    else if (a == "--max-rows")
      o.max_rows = std::atoll(v.c_str());
    else
      Usage(("unknown option " + a).c_str());
  }
  if (o.shapes.empty() || o.out.empty()) Usage("--shapes and --out are required");
  return o;
}

struct GemmShape {
  std::string kind, source;
  int64_t n = 0, k = 0;
};

std::vector<GemmShape> ReadShapes(const std::string& path) {
  std::ifstream in(path);
  if (!in) Usage(("cannot read " + path).c_str());
  std::vector<GemmShape> shapes;
  std::string line;
  std::getline(in, line);  // header: kind,n,k,source
  for (int no = 2; std::getline(in, line); ++no) {
    if (line.empty()) continue;
    std::stringstream ss(line);
    GemmShape s;
    std::string n, k;
    std::getline(ss, s.kind, ','), std::getline(ss, n, ','), std::getline(ss, k, ','),
        std::getline(ss, s.source);
    s.n = std::atoll(n.c_str()), s.k = std::atoll(k.c_str());
    if (s.kind.empty() || s.n <= 0 || s.k <= 0) {
      std::fprintf(stderr, "gpu_ops_bench: %s:%d: field 'n' or 'k': not a positive integer\n",
                   path.c_str(), no);
      std::exit(2);
    }
    shapes.push_back(s);
  }
  return shapes;
}

// One measured op: a row of gpu_ops.csv and, with a ShardScope kind, an event
// of the trace of its dtype.
struct Measurement {
  Measurement(std::string kind_, std::string dtype_, std::string note_, int64_t m_, int64_t n_,
              int64_t k_)
      : kind(std::move(kind_)),
        dtype(std::move(dtype_)),
        note(std::move(note_)),
        m(m_),
        n(n_),
        k(k_) {}
  std::string kind;  // ShardScope op kind ("ffn_up", "norm"…) or "copy", "gemm_peak"
  std::string dtype, note;
  int64_t m = 0, n = 0, k = 0;
  double flops = 0, bytes_read = 0, bytes_written = 0;
  std::vector<double> seconds;  // one per timed sample
  bool Skipped() const { return note.rfind("skipped", 0) == 0; }
  double Median() const {
    std::vector<double> s = seconds;
    std::sort(s.begin(), s.end());
    return s.empty() ? 0 : s[s.size() / 2];
  }
};

class Results {
 public:
  explicit Results(const std::string& dir) : dir_(dir), csv_(dir + "/gpu_ops.csv") {
    if (!csv_) Usage(("cannot write " + dir + "/gpu_ops.csv").c_str());
    csv_ << "kind,dtype,m,n,k,flops,bytes,median_us,min_us,tflop_s,gb_s,note\n";
  }
  void Add(const Measurement& r) {
    if (r.seconds.empty()) return;
    const double t = r.Median();
    const double lo = *std::min_element(r.seconds.begin(), r.seconds.end());
    const double bytes = r.bytes_read + r.bytes_written;
    const double per_s = t > 0 ? 1 / t : 0;  // a skipped op has no time
    char buf[512];
    std::snprintf(buf, sizeof buf, "%s,%s,%lld,%lld,%lld,%.0f,%.0f,%.3f,%.3f,%.2f,%.1f,%s\n",
                  r.kind.c_str(), r.dtype.c_str(), static_cast<long long>(r.m),
                  static_cast<long long>(r.n), static_cast<long long>(r.k), r.flops, bytes, t * 1e6,
                  lo * 1e6, r.flops * per_s / 1e12, bytes * per_s / 1e9, r.note.c_str());
    csv_ << buf << std::flush;
    all_.push_back(r);
  }
  const std::vector<Measurement>& all() const { return all_; }

  // A ShardScope trace (docs/trace_format.md) of the ops of `trace_dtype`
  // (GEMMs of that dtype, and the bf16 elementwise ops in both): one event
  // per timed sample, back to back on rank 0's compute stream.
  void WriteTrace(const std::string& trace_dtype, const std::string& device_json) const {
    const std::string path = dir_ + "/gpu_ops_" + trace_dtype + ".trace";
    std::vector<shardscope::bench::GpuOpSample> samples;
    int64_t ts_ns = 0;
    for (const Measurement& r : all_) {
      const bool gemm = r.k > 0;
      if (r.kind == "copy" || r.kind == "gemm_peak" || r.kind == "fp8_quant" ||
          r.kind.rfind("decode_layers", 0) == 0 || (gemm && r.dtype != trace_dtype) || r.Skipped())
        continue;
      char name[256];
      std::snprintf(name, sizeof name, "%s m=%lld n=%lld k=%lld", r.kind.c_str(),
                    static_cast<long long>(r.m), static_cast<long long>(r.n),
                    static_cast<long long>(r.k));
      for (double s : r.seconds) {
        const int64_t dur_ns = std::max<int64_t>(1, std::llround(s * 1e9));
        samples.push_back(
            {name, r.kind, r.dtype, ts_ns, dur_ns, r.flops, r.bytes_read, r.bytes_written});
        ts_ns += dur_ns + 1000;  // 1 µs apart: distinct, ordered
      }
    }
    const std::string error =
        shardscope::bench::WriteGpuOpsTrace(path, trace_dtype, device_json, samples);
    if (!error.empty()) {
      std::fprintf(stderr, "gpu_ops_bench: cannot write %s: %s\n", path.c_str(), error.c_str());
      std::exit(1);
    }
    std::fprintf(stderr, "gpu_ops_bench: wrote %s\n", path.c_str());
  }

 private:
  std::string dir_;
  std::ofstream csv_;
  std::vector<Measurement> all_;
};

// ---- Timing.

class Timer {
 public:
  Timer(cudaStream_t stream, double budget_s) : stream_(stream), deadline_(Clock::now()) {
    deadline_ +=
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(budget_s));
  }
  bool OutOfTime() const { return Clock::now() > deadline_; }

  // Seconds per run of `op(i)` (i: the rep, to rotate buffers), `samples`
  // times: each sample replays a CUDA graph of R reps (R such that a replay
  // takes ~0.5 ms) between two events. `op` returns false when it cannot run
  // (the measurement is then empty). Without graph capture, eager launches.
  std::vector<double> Time(const std::function<bool(int)>& op, int samples, std::string* note) {
    if (!op(0)) return {};
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    CUDA_CHECK(cudaEventRecord(a_.e, stream_));
    op(1);
    CUDA_CHECK(cudaEventRecord(b_.e, stream_));
    CUDA_CHECK(cudaEventSynchronize(b_.e));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a_.e, b_.e));
    const int reps = std::clamp(static_cast<int>(std::ceil(0.5 / std::max(ms, 1e-4f))), 1, 100);
    Graph graph;
    bool captured =
        cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
    for (int i = 0; captured && i < reps; ++i) captured = op(i);
    captured = cudaStreamEndCapture(stream_, &graph.g) == cudaSuccess && captured;
    captured = captured && cudaGraphInstantiate(&graph.exec, graph.g, 0) == cudaSuccess;
    if (!captured) {
      cudaGetLastError();  // clear the capture error; time eager launches instead
      *note += (note->empty() ? "" : " ") + std::string("eager");
    }
    auto run = [&] {
      if (captured) return cudaGraphLaunch(graph.exec, stream_) == cudaSuccess;
      for (int i = 0; i < reps; ++i) op(i);
      return true;
    };
    run();
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::vector<double> out;
    for (int s = 0; s < samples; ++s) {
      CUDA_CHECK(cudaEventRecord(a_.e, stream_));
      run();
      CUDA_CHECK(cudaEventRecord(b_.e, stream_));
      CUDA_CHECK(cudaEventSynchronize(b_.e));
      CUDA_CHECK(cudaEventElapsedTime(&ms, a_.e, b_.e));
      out.push_back(ms * 1e-3 / reps);
    }
    return out;
  }

 private:
  cudaStream_t stream_;
  Clock::time_point deadline_;
  Event a_, b_;
};

int Grid(int64_t work, int threads) {
  return static_cast<int>(std::clamp<int64_t>((work + threads - 1) / threads, 1, 132 * 16));
}

// Copies of a buffer set of `bytes` so that rotating over them reads more
// than twice the L2 cache (at most 16).
int Copies(double bytes, double l2) {
  return static_cast<int>(std::clamp(std::ceil(2 * l2 / std::max(bytes, 1.0)), 1.0, 16.0));
}

void FillRandom(void* p, int64_t elements, bool is_fp8, uint32_t seed, cudaStream_t s) {
  if (is_fp8)
    FillFp8<<<Grid(elements, 256), 256, 0, s>>>(static_cast<fp8*>(p), elements, seed);
  else
    FillBf16<<<Grid(elements, 256), 256, 0, s>>>(static_cast<bf16*>(p), elements, seed, 1.0f);
  CUDA_CHECK(cudaGetLastError());
}

// ---- GEMMs.

class GemmBench {
 public:
  GemmBench(cudaStream_t stream, double l2) : stream_(stream), l2_(l2), workspace_(kWorkspace) {
    CUBLAS_CHECK(cublasLtCreate(&lt_));
  }
  ~GemmBench() { cublasLtDestroy(lt_); }

  // Y[m×n] = X[m×k] · W[n×k]ᵀ for every m of `rows`, in `dtype` ("bf16" or
  // "fp8"): cuBLASLt column-major D(n×m) = op(A)=Wᵀ(n×k) · B=Xᵀ(k×m), the
  // "TN" layout fp8 requires. The heuristic's first algorithm per shape.
  void Sweep(const GemmShape& shape, const std::string& dtype, const std::vector<int64_t>& rows,
             Timer& timer, Results& results) {
    const bool is_fp8 = dtype == "fp8";
    const int64_t es = is_fp8 ? 1 : 2;
    const int64_t n = shape.n, k = shape.k, max_m = rows.back();
    const int copies = Copies(static_cast<double>(n * k * es), l2_);
    DeviceBuffer w(static_cast<size_t>(copies * n * k * es)),
        x(static_cast<size_t>(max_m * k * es)), y(static_cast<size_t>(max_m * n * 2));
    FillRandom(w.p, copies * n * k, is_fp8, 1, stream_);
    FillRandom(x.p, max_m * k, is_fp8, 2, stream_);
    for (int64_t m : rows) {
      if (timer.OutOfTime()) return;
      Measurement r{shape.kind, dtype, "", m, n, k};
      r.flops = 2.0 * m * n * k;
      // The Program's convention (src/program): every operand in the run's
      // dtype, so an fp8 GEMM's output counts 1 byte an element (it writes bf16).
      r.bytes_read = static_cast<double>(m * k + n * k) * es,
      r.bytes_written = static_cast<double>(m * n) * es;
      Matmul mm;
      if (!mm.Init(lt_, is_fp8, m, n, k, workspace_.bytes, &r.note)) {
        results.Add(Skipped(r));
        continue;
      }
      float alpha = 1, beta = 0;
      r.seconds = timer.Time(
          [&](int i) {
            const char* wi = w.as<char>() + (i % copies) * n * k * es;
            return cublasLtMatmul(lt_, mm.desc, &alpha, wi, mm.a, x.p, mm.b, &beta, y.p, mm.c, y.p,
                                  mm.c, &mm.algo, workspace_.p, workspace_.bytes,
                                  stream_) == CUBLAS_STATUS_SUCCESS;
          },
          5, &r.note);
      results.Add(r.seconds.empty() ? Skipped(r) : r);
    }
  }

  // How launches add up: Llama-3.1-8B's decode layers (TP1, bf16, m rows;
  // norm, QKV, RoPE, out, residual, norm, up, SwiGLU, down, residual: 10
  // kernels a layer, attention left out), 32 layers with their own weights,
  // launched one by one (eager, as without CUDA graphs) and replayed as one
  // CUDA graph. Rows "decode_layers_eager" / "_graph" in gpu_ops.csv (n: layers,
  // k: kernels); each kernel's own time is in the sweep's rows of its shape.
  void DecodeLayers(const std::vector<int64_t>& rows, Timer& timer, Results& results) {
    constexpr int64_t kLayers = 32, kH = 4096, kQkv = 6144, kF = 14336;
    struct Weights {
      DeviceBuffer qkv{kQkv * kH * 2}, out{kH * kH * 2}, up{2 * kF * kH * 2}, down{kH * kF * 2},
          norm{kH * 2};
    };
    std::vector<std::unique_ptr<Weights>> layers;
    for (int64_t l = 0; l < kLayers; ++l) {
      layers.push_back(std::make_unique<Weights>());
      for (const DeviceBuffer* b : {&layers.back()->qkv, &layers.back()->out, &layers.back()->up,
                                    &layers.back()->down, &layers.back()->norm}) {
        FillRandom(b->p, static_cast<int64_t>(b->bytes / 2), false, static_cast<uint32_t>(l),
                   stream_);
      }
    }
    const int64_t max_m = rows.back();
    DeviceBuffer x(max_m * kH * 2), y(max_m * kH * 2), qkv(max_m * kQkv * 2),
        gu(max_m * 2 * kF * 2), act(max_m * kF * 2);
    FillRandom(x.p, max_m * kH, false, 7, stream_);
    for (int64_t m : rows) {
      if (timer.OutOfTime()) return;
      Matmul mq, mo, mu, md;
      std::string note;
      if (!mq.Init(lt_, false, m, kQkv, kH, workspace_.bytes, &note) ||
          !mo.Init(lt_, false, m, kH, kH, workspace_.bytes, &note) ||
          !mu.Init(lt_, false, m, 2 * kF, kH, workspace_.bytes, &note) ||
          !md.Init(lt_, false, m, kH, kF, workspace_.bytes, &note)) {
        continue;
      }
      float alpha = 1, beta = 0;
      auto gemm = [&](Matmul& mm, const DeviceBuffer& w, const void* in, void* out) {
        cublasLtMatmul(lt_, mm.desc, &alpha, w.p, mm.a, in, mm.b, &beta, out, mm.c, out, mm.c,
                       &mm.algo, workspace_.p, workspace_.bytes, stream_);
      };
      const int64_t mh = m * kH;
      auto launch_all = [&] {
        for (const auto& w : layers) {
          RmsNormKernel<<<static_cast<unsigned>(m), 256, 0, stream_>>>(
              x.as<bf16>(), w->norm.as<bf16>(), y.as<bf16>(), kH);
          gemm(mq, w->qkv, y.p, qkv.p);
          RopeKernel<<<Grid(mh / 2, 256), 256, 0, stream_>>>(qkv.as<bf16>(), m,
                                                             static_cast<int>(kH));
          gemm(mo, w->out, qkv.p, y.p);
          AddKernel<<<Grid(mh / 8, 256), 256, 0, stream_>>>(x.as<bf16>(), y.as<bf16>(),
                                                            x.as<bf16>(), mh / 8);
          RmsNormKernel<<<static_cast<unsigned>(m), 256, 0, stream_>>>(
              x.as<bf16>(), w->norm.as<bf16>(), y.as<bf16>(), kH);
          gemm(mu, w->up, y.p, gu.p);
          SwiGluKernel<<<Grid(m * kF / 8, 256), 256, 0, stream_>>>(gu.as<bf16>(), act.as<bf16>(), m,
                                                                   static_cast<int>(kF));
          gemm(md, w->down, act.p, y.p);
          AddKernel<<<Grid(mh / 8, 256), 256, 0, stream_>>>(x.as<bf16>(), y.as<bf16>(),
                                                            x.as<bf16>(), mh / 8);
        }
      };
      // Five timed runs of `run` (after a warm-up) between two events.
      Event a, b;
      auto timed = [&](const char* kind, const std::function<void()>& run) {
        Measurement r(kind, "bf16", "", m, kLayers, 10 * kLayers);
        run();
        CUDA_CHECK(cudaStreamSynchronize(stream_));
        for (int i = 0; i < 5; ++i) {
          CUDA_CHECK(cudaEventRecord(a.e, stream_));
          run();
          CUDA_CHECK(cudaEventRecord(b.e, stream_));
          CUDA_CHECK(cudaEventSynchronize(b.e));
          float ms = 0;
          CUDA_CHECK(cudaEventElapsedTime(&ms, a.e, b.e));
          r.seconds.push_back(ms * 1e-3);
        }
        CUDA_CHECK(cudaGetLastError());
        results.Add(r);
      };
      timed("decode_layers_eager", launch_all);
      Graph g;
      CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
      launch_all();
      CUDA_CHECK(cudaStreamEndCapture(stream_, &g.g));
      CUDA_CHECK(cudaGraphInstantiate(&g.exec, g.g, 0));
      timed("decode_layers_graph", [&] { CUDA_CHECK(cudaGraphLaunch(g.exec, stream_)); });
    }
  }

 private:
  static constexpr size_t kWorkspace = 32 << 20;  // cuBLAS's recommendation for Hopper

  // A descriptor set for one shape; RAII.
  struct Matmul {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    ~Matmul() {
      if (c) cublasLtMatrixLayoutDestroy(c);
      if (b) cublasLtMatrixLayoutDestroy(b);
      if (a) cublasLtMatrixLayoutDestroy(a);
      if (desc) cublasLtMatmulDescDestroy(desc);
    }
    bool Init(cublasLtHandle_t lt, bool is_fp8, int64_t m, int64_t n, int64_t k, size_t workspace,
              std::string* note) {
      const cudaDataType_t in = is_fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
      const cublasOperation_t t = CUBLAS_OP_T, nt = CUBLAS_OP_N;
      if (cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) !=
              CUBLAS_STATUS_SUCCESS ||
          cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t) !=
              CUBLAS_STATUS_SUCCESS ||
          cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &nt, sizeof nt) !=
              CUBLAS_STATUS_SUCCESS ||
          cublasLtMatrixLayoutCreate(&a, in, k, n, k) != CUBLAS_STATUS_SUCCESS ||
          cublasLtMatrixLayoutCreate(&b, in, k, m, k) != CUBLAS_STATUS_SUCCESS ||
          cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, n, m, n) != CUBLAS_STATUS_SUCCESS) {
        *note = "descriptor not supported";
        return false;
      }
      cublasLtMatmulPreference_t pref = nullptr;
      cublasLtMatmulHeuristicResult_t result{};
      int found = 0;
      cublasLtMatmulPreferenceCreate(&pref);
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &workspace, sizeof workspace);
      const cublasStatus_t s =
          cublasLtMatmulAlgoGetHeuristic(lt, desc, a, b, c, c, pref, 1, &result, &found);
      cublasLtMatmulPreferenceDestroy(pref);
      if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
        *note = "no cuBLASLt algorithm";
        return false;
      }
      algo = result.algo;
      return true;
    }
  };

  static Measurement Skipped(Measurement r) {
    r.seconds = {0};
    if (r.note.empty()) r.note = "failed";
    r.note = "skipped: " + r.note;
    return r;
  }

  cudaStream_t stream_;
  double l2_;
  cublasLtHandle_t lt_ = nullptr;
  DeviceBuffer workspace_;
};

// ---- Elementwise and gather ops (bf16).

void ElementwiseSweep(cudaStream_t stream, double l2, const std::vector<int64_t>& rows,
                      Timer& timer, Results& results) {
  struct Case {
    std::string kind;
    int64_t width;
  };
  // Widths of the models in bench/gpu/gpu_shapes.yaml: hidden sizes, FFN
  // widths per rank, KV widths (GQA 8 × 128; MLA latent 512 + 64).
  const std::vector<Case> cases = {
      {"norm", 4096},        {"norm", 7168},        {"norm", 8192},         {"activation", 3584},
      {"activation", 14336}, {"activation", 18432}, {"residual_add", 4096}, {"residual_add", 8192},
      {"rope", 4096},        {"rope", 1024},        {"kv_append", 1024},    {"kv_append", 576},
      {"embedding", 4096},   {"embedding", 7168}};
  constexpr int64_t kVocab = 128256, kCacheSlots = 65536;
  for (const Case& c : cases) {
    for (int64_t m : rows) {
      if (timer.OutOfTime()) return;
      const int64_t w = c.width, mw = m * w;
      Measurement r{c.kind, "bf16", "", m, w, 0};
      // Bytes and FLOPs as the Program counts them (src/program/program_builder.cc).
      double in_elems = 0, out_elems = mw, extra_bytes = 0;
      if (c.kind == "norm") in_elems = mw + w, r.flops = 4.0 * mw;
      if (c.kind == "activation") in_elems = 2.0 * mw, r.flops = 5.0 * mw;
      if (c.kind == "residual_add") in_elems = 2.0 * mw, r.flops = static_cast<double>(mw);
      if (c.kind == "rope") in_elems = static_cast<double>(mw), r.flops = 3.0 * mw;
      if (c.kind == "kv_append") in_elems = static_cast<double>(mw);
      if (c.kind == "embedding") in_elems = static_cast<double>(mw), extra_bytes = 4.0 * m;
      r.bytes_read = in_elems * 2 + extra_bytes, r.bytes_written = out_elems * 2;
      const int copies = Copies(r.bytes_read + r.bytes_written, l2);
      const int64_t in_size = c.kind == "activation" || c.kind == "residual_add" ? 2 * mw : mw;
      DeviceBuffer in(static_cast<size_t>(copies * in_size * 2)),
          out(static_cast<size_t>(copies * mw * 2)), weight(static_cast<size_t>(w * 2)),
          ids(static_cast<size_t>(copies * m * 4));
      const bool table = c.kind == "embedding", cache = c.kind == "kv_append";
      DeviceBuffer big(static_cast<size_t>((table ? kVocab : cache ? kCacheSlots : 1) * w * 2));
      FillRandom(in.p, copies * in_size, false, 3, stream);
      FillRandom(weight.p, w, false, 4, stream);
      if (table || cache) {
        FillRandom(big.p, (table ? kVocab : kCacheSlots) * w, false, 5, stream);
        FillIds<<<Grid(copies * m, 256), 256, 0, stream>>>(ids.as<int32_t>(), copies * m,
                                                           table ? kVocab : kCacheSlots, 6);
      }
      const int vec_threads = 256;
      r.seconds = timer.Time(
          [&](int i) {
            const int j = i % copies;
            bf16* src = in.as<bf16>() + j * in_size;
            bf16* dst = out.as<bf16>() + j * mw;
            const int32_t* idx = ids.as<int32_t>() + j * m;
            if (c.kind == "norm") {
              RmsNormKernel<<<static_cast<unsigned>(m), 256, 0, stream>>>(src, weight.as<bf16>(),
                                                                          dst, static_cast<int>(w));
            } else if (c.kind == "activation") {
              SwiGluKernel<<<Grid(mw / 8, vec_threads), vec_threads, 0, stream>>>(
                  src, dst, m, static_cast<int>(w));
            } else if (c.kind == "residual_add") {
              AddKernel<<<Grid(mw / 8, vec_threads), vec_threads, 0, stream>>>(src, src + mw, dst,
                                                                               mw / 8);
            } else if (c.kind == "rope") {
              RopeKernel<<<Grid(mw / 2, vec_threads), vec_threads, 0, stream>>>(
                  src, m, static_cast<int>(w));
            } else if (c.kind == "kv_append") {
              RowScatterKernel<<<static_cast<unsigned>(m), 128, 0, stream>>>(
                  src, big.as<bf16>(), idx, static_cast<int>(w));
            } else {
              GatherKernel<<<static_cast<unsigned>(m), 128, 0, stream>>>(idx, big.as<bf16>(), dst,
                                                                         static_cast<int>(w));
            }
            return cudaPeekAtLastError() == cudaSuccess;
          },
          5, &r.note);
      CUDA_CHECK(cudaGetLastError());
      if (!r.seconds.empty()) results.Add(r);
    }
  }
}

// ---- FP8 activation quantisation (per tensor, dynamic scale), in gpu_ops.csv
// only: calibrate_gpu.sh turns it into fp8_quant_bytes_per_element.

void Fp8QuantSweep(cudaStream_t stream, double l2, const std::vector<int64_t>& rows, Timer& timer,
                   Results& results) {
  // The inputs of the FP8 GEMMs of bench/gpu/gpu_shapes.yaml: hidden sizes and
  // FFN widths per rank.
  for (int64_t w : {4096, 7168, 8192, 14336}) {
    for (int64_t m : rows) {
      if (timer.OutOfTime()) return;
      const int64_t mw = m * w;
      Measurement r{"fp8_quant", "bf16", "per-tensor dynamic: amax, then scale and cast", m, w, 0};
      r.bytes_read = 4.0 * mw, r.bytes_written = static_cast<double>(mw);
      const int copies = Copies(3.0 * mw, l2);
      DeviceBuffer in(static_cast<size_t>(copies * mw * 2)), out(static_cast<size_t>(copies * mw)),
          amax(sizeof(unsigned) * copies);
      FillRandom(in.p, copies * mw, false, 7, stream);
      const int threads = 256;
      const int grid = Grid(mw / 8, threads);
      r.seconds = timer.Time(
          [&](int i) {
            const int j = i % copies;
            unsigned* a = amax.as<unsigned>() + j;
            const bf16* x = in.as<bf16>() + j * mw;
            if (cudaMemsetAsync(a, 0, sizeof(unsigned), stream) != cudaSuccess) return false;
            AmaxKernel<<<grid, threads, 0, stream>>>(x, mw / 8, a);
            QuantKernel<<<grid, threads, 0, stream>>>(
                x, a, reinterpret_cast<Fp8x8*>(out.as<uint8_t>() + j * mw), mw / 8);
            return cudaPeekAtLastError() == cudaSuccess;
          },
          5, &r.note);
      CUDA_CHECK(cudaGetLastError());
      if (!r.seconds.empty()) results.Add(r);
    }
  }
}

// ---- Device limits: copy bandwidth, GEMM peak, launch costs.

struct Limits {
  double memcpy_gb_s = 0, copy_kernel_gb_s = 0;
  double eager_launch_host_us = 0, eager_kernel_interval_us = 0, graph_kernel_interval_us = 0;
  double empty_kernel_event_us = 0, graph_launch_roundtrip_us = 0;
};

double MedianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

Limits MeasureLimits(cudaStream_t stream, Timer& timer, Results& results) {
  Limits lim;
  // Copy: 1 GiB device to device; read + write counted (2 × size).
  const int64_t bytes = int64_t{1} << 30;
  DeviceBuffer a(bytes), b(bytes);
  CUDA_CHECK(cudaMemsetAsync(a.p, 1, bytes, stream));
  for (int kernel = 0; kernel < 2; ++kernel) {
    Measurement r{"copy", "bf16", kernel ? "copy kernel" : "cudaMemcpyAsync", 1, bytes / 2, 0};
    r.bytes_read = r.bytes_written = static_cast<double>(bytes);
    r.seconds = timer.Time(
        [&](int) {
          if (kernel) {
            CopyKernel<<<132 * 8, 512, 0, stream>>>(a.as<uint4>(), b.as<uint4>(), bytes / 16);
            return cudaPeekAtLastError() == cudaSuccess;
          }
          return cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice, stream) == cudaSuccess;
        },
        5, &r.note);
    results.Add(r);
    (kernel ? lim.copy_kernel_gb_s : lim.memcpy_gb_s) = 2.0 * bytes / r.Median() / 1e9;
  }
  // Launch costs of an empty kernel.
  constexpr int kLaunches = 2000;
  Event e0, e1;
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaEventRecord(e0.e, stream));
  const auto h0 = Clock::now();
  for (int i = 0; i < kLaunches; ++i) EmptyKernel<<<1, 32, 0, stream>>>();
  const auto h1 = Clock::now();
  CUDA_CHECK(cudaEventRecord(e1.e, stream));
  CUDA_CHECK(cudaEventSynchronize(e1.e));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, e0.e, e1.e));
  lim.eager_launch_host_us = std::chrono::duration<double, std::micro>(h1 - h0).count() / kLaunches;
  lim.eager_kernel_interval_us = ms * 1e3 / kLaunches;
  {
    Graph g;
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < kLaunches; ++i) EmptyKernel<<<1, 32, 0, stream>>>();
    CUDA_CHECK(cudaStreamEndCapture(stream, &g.g));
    CUDA_CHECK(cudaGraphInstantiate(&g.exec, g.g, 0));
    CUDA_CHECK(cudaGraphLaunch(g.exec, stream));
    CUDA_CHECK(cudaEventRecord(e0.e, stream));
    CUDA_CHECK(cudaGraphLaunch(g.exec, stream));
    CUDA_CHECK(cudaEventRecord(e1.e, stream));
    CUDA_CHECK(cudaEventSynchronize(e1.e));
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0.e, e1.e));
    lim.graph_kernel_interval_us = ms * 1e3 / kLaunches;
  }
  std::vector<double> single, roundtrip;
  {
    Graph g;
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    EmptyKernel<<<1, 32, 0, stream>>>();
    CUDA_CHECK(cudaStreamEndCapture(stream, &g.g));
    CUDA_CHECK(cudaGraphInstantiate(&g.exec, g.g, 0));
    for (int i = 0; i < 200; ++i) {
      CUDA_CHECK(cudaEventRecord(e0.e, stream));
      EmptyKernel<<<1, 32, 0, stream>>>();
      CUDA_CHECK(cudaEventRecord(e1.e, stream));
      CUDA_CHECK(cudaEventSynchronize(e1.e));
      CUDA_CHECK(cudaEventElapsedTime(&ms, e0.e, e1.e));
      single.push_back(ms * 1e3);
      const auto t0 = Clock::now();
      CUDA_CHECK(cudaGraphLaunch(g.exec, stream));
      CUDA_CHECK(cudaStreamSynchronize(stream));
      roundtrip.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
  }
  lim.empty_kernel_event_us = MedianOf(single);
  lim.graph_launch_roundtrip_us = MedianOf(roundtrip);
  return lim;
}

std::string DeviceJson(const cudaDeviceProp& p, int driver, int runtime, const Limits& lim,
                       double bf16_peak, double fp8_peak) {
  char buf[2048];
  std::snprintf(buf, sizeof buf,
                "{\"name\":\"%s\",\"compute_capability\":\"%d.%d\",\"sms\":%d,\"memory_bytes\":%zu,"
                "\"l2_bytes\":%d,\"driver\":%d,\"runtime\":%d,\"memcpy_d2d_gb_s\":%.1f,\"copy_"
                "kernel_gb_s\":%.1f,"
                "\"gemm_bf16_peak_tflop_s\":%.1f,\"gemm_fp8_peak_tflop_s\":%.1f,\"eager_launch_"
                "host_us\":%.3f,"
                "\"eager_kernel_interval_us\":%.3f,\"graph_kernel_interval_us\":%.3f,\"empty_"
                "kernel_event_us\":%.3f,"
                "\"graph_launch_roundtrip_us\":%.3f}",
                p.name, p.major, p.minor, p.multiProcessorCount, p.totalGlobalMem, p.l2CacheSize,
                driver, runtime, lim.memcpy_gb_s, lim.copy_kernel_gb_s, bf16_peak, fp8_peak,
                lim.eager_launch_host_us, lim.eager_kernel_interval_us,
                lim.graph_kernel_interval_us, lim.empty_kernel_event_us,
                lim.graph_launch_roundtrip_us);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = ParseOptions(argc, argv);
  const std::vector<GemmShape> shapes = ReadShapes(opt.shapes);
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver), cudaRuntimeGetVersion(&runtime);
  std::fprintf(stderr, "gpu_ops_bench: %s (sm_%d%d, %d SMs), %zu GEMM shapes, budget %.0f s\n",
               prop.name, prop.major, prop.minor, prop.multiProcessorCount, shapes.size(),
               opt.budget_s);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Results results(opt.out);
  Timer timer(stream, opt.budget_s);
  std::vector<int64_t> rows;
  for (int64_t m = 1; m <= opt.max_rows; m *= 2) rows.push_back(m);

  const Limits lim = MeasureLimits(stream, timer, results);
  std::fprintf(stderr,
               "gpu_ops_bench: copy %.0f GB/s (memcpy), %.0f GB/s (kernel); launch %.2f us host\n",
               lim.memcpy_gb_s, lim.copy_kernel_gb_s, lim.eager_launch_host_us);
  const double l2 = prop.l2CacheSize;
  GemmBench gemm(stream, l2);
  // The square peak first, then every Program shape, bf16 then fp8.
  for (const std::string dtype : {"bf16", "fp8"}) {
    gemm.Sweep(GemmShape{"gemm_peak", "peak", 8192, 8192}, dtype, {8192}, timer, results);
  }
  ElementwiseSweep(stream, l2, rows, timer, results);
  Fp8QuantSweep(stream, l2, rows, timer, results);
  gemm.DecodeLayers({1, 16, 128}, timer, results);
  for (const std::string dtype : {"bf16", "fp8"}) {
    for (const GemmShape& s : shapes) {
      if (timer.OutOfTime()) break;
      gemm.Sweep(s, dtype, rows, timer, results);
      std::fprintf(stderr, "gpu_ops_bench: %s %s n=%lld k=%lld done\n", dtype.c_str(),
                   s.kind.c_str(), static_cast<long long>(s.n), static_cast<long long>(s.k));
    }
  }
  if (timer.OutOfTime())
    std::fprintf(stderr, "gpu_ops_bench: budget of %.0f s spent; the sweep is incomplete\n",
                 opt.budget_s);
  double peak[2] = {0, 0};
  for (const Measurement& r : results.all()) {
    if (r.k == 0 || r.Skipped() || r.kind.rfind("decode_layers", 0) == 0) continue;
    double& p = peak[r.dtype == "fp8"];
    p = std::max(p, r.flops / r.Median() / 1e12);
  }
  const std::string device = DeviceJson(prop, driver, runtime, lim, peak[0], peak[1]);
  std::ofstream(opt.out + "/device.json") << device << "\n";
  results.WriteTrace("bf16", device);
  results.WriteTrace("fp8", device);
  CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}
