#include "trace/block_writer.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace shardscope::trace {
namespace {

// A gzip member header: deflate, no name or time, OS unknown (RFC 1952 2.3).
constexpr unsigned char kGzipHeader[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};

void PutLe32(uint32_t v, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// Raw deflate of one block with its own z_stream (reset between blocks): ends
// with a sync flush (byte-aligned, not final) or, for the last block, final.
class Deflater {
 public:
  explicit Deflater(int level) {
    std::memset(&zs_, 0, sizeof(zs_));
    ok_ = deflateInit2(&zs_, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK;
  }
  ~Deflater() {
    if (ok_) deflateEnd(&zs_);
  }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;

  bool Deflate(const char* in, size_t size, bool last, std::string* out) {
    if (!ok_ || deflateReset(&zs_) != Z_OK) return false;
    // deflateBound covers the data and the end of the stream; a sync flush adds
    // an empty stored block (5 bytes).
    out->resize(deflateBound(&zs_, static_cast<uLong>(size)) + 16);
    zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in));
    zs_.avail_in = static_cast<uInt>(size);
    zs_.next_out = reinterpret_cast<Bytef*>(out->data());
    zs_.avail_out = static_cast<uInt>(out->size());
    int rc = deflate(&zs_, last ? Z_FINISH : Z_SYNC_FLUSH);
    if (rc != (last ? Z_STREAM_END : Z_OK) || zs_.avail_in != 0) return false;
    out->resize(out->size() - zs_.avail_out);
    return true;
  }

 private:
  z_stream zs_;
  bool ok_ = false;
};

}  // namespace

void TextBlock::Reserve(size_t want) {
  if (want <= capacity) return;
  auto bigger = std::make_unique<char[]>(want);
  if (size > 0) std::memcpy(bigger.get(), data.get(), size);
  data = std::move(bigger);
  capacity = want;
}

BlockWriter::BlockWriter(int fd, std::string name, const BlockWriterOptions& options)
    : fd_(fd), name_(std::move(name)), options_(options) {
  int threads = 0;
  if (options_.gzip) {
    threads = options_.threads > 0
                  ? options_.threads
                  : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    for (int i = 0; i < threads; ++i) compressors_.emplace_back([this] { CompressLoop(); });
  }
  // Enough blocks in flight to keep every thread busy, and no more (memory).
  max_pending_ = static_cast<size_t>(threads) + 2;
  writer_ = std::thread([this] { WriteLoop(); });
}

BlockWriter::~BlockWriter() { Stop(); }

void BlockWriter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  for (std::thread& t : compressors_) {
    if (t.joinable()) t.join();
  }
}

int64_t BlockWriter::bytes_out() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_out_;
}

TextBlock BlockWriter::NewBlock() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      TextBlock b = std::move(free_.back());
      free_.pop_back();
      b.size = 0;
      return b;
    }
  }
  TextBlock b;
  b.Reserve(options_.block_bytes);
  return b;
}

Status BlockWriter::Write(TextBlock block) { return Submit(std::move(block), false); }

Status BlockWriter::Finish(TextBlock last) {
  Status s = Submit(std::move(last), true);
  {
    std::lock_guard<std::mutex> lock(mu_);
    finishing_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  Stop();
  std::lock_guard<std::mutex> lock(mu_);
  return s.ok() ? error_ : s;
}

Status BlockWriter::Submit(TextBlock block, bool last) {
  bytes_in_ += static_cast<int64_t>(block.size);
  auto job = std::make_unique<Job>();
  job->in = std::move(block);
  job->last = last;
  job->done = !options_.gzip;
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return jobs_.size() < max_pending_ || !error_.ok() || stop_; });
  if (!error_.ok()) return error_;
  if (stop_) return InternalError("{}: write after the writer stopped", name_);
  jobs_.push_back(std::move(job));
  lock.unlock();
  cv_.notify_all();
  return Status::Ok();
}

void BlockWriter::CompressLoop() {
  Deflater deflater(options_.gzip_level);
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    Job* job = nullptr;
    cv_.wait(lock, [&] {
      if (stop_) return true;
      for (auto& j : jobs_) {
        if (!j->taken) {
          job = j.get();
          return true;
        }
      }
      return false;
    });
    if (stop_) return;
    job->taken = true;
    lock.unlock();
    // The job stays in jobs_ (and alive) until it is done and written.
    bool ok = deflater.Deflate(job->in.data.get(), job->in.size, job->last, &job->out);
    job->crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(job->in.data.get()),
                                           static_cast<uInt>(job->in.size)));
    lock.lock();
    if (!ok && error_.ok()) error_ = InternalError("{}: zlib deflate failed", name_);
    job->done = true;
    cv_.notify_all();
  }
}

Status BlockWriter::WriteAll(const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd_, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("{}: write failed: {}", name_, std::strerror(errno));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

void BlockWriter::WriteLoop() {
  uLong crc = crc32(0, nullptr, 0);
  uint64_t total = 0;  // uncompressed bytes, for the gzip trailer
  bool header = false;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] {
      return stop_ || (!jobs_.empty() && jobs_.front()->done) || (finishing_ && jobs_.empty());
    });
    if (stop_ || jobs_.empty()) return;
    std::unique_ptr<Job> job = std::move(jobs_.front());
    jobs_.pop_front();
    const bool failed = !error_.ok();
    lock.unlock();
    cv_.notify_all();  // a slot is free
    Status s;
    int64_t written = 0;
    if (failed) {
      // Drop it: the file is abandoned after the first error.
    } else if (!options_.gzip) {
      s = WriteAll(job->in.data.get(), job->in.size);
      written = static_cast<int64_t>(job->in.size);
    } else {
      if (!header) {
        s = WriteAll(reinterpret_cast<const char*>(kGzipHeader), sizeof(kGzipHeader));
        written += sizeof(kGzipHeader);
        header = true;
      }
      if (s.ok()) s = WriteAll(job->out.data(), job->out.size());
      written += static_cast<int64_t>(job->out.size());
      crc = crc32_combine(crc, job->crc, static_cast<z_off_t>(job->in.size));
      total += job->in.size;
      if (s.ok() && job->last) {
        char trailer[8];
        PutLe32(static_cast<uint32_t>(crc), trailer);
        PutLe32(static_cast<uint32_t>(total & 0xffffffffu), trailer + 4);
        s = WriteAll(trailer, sizeof(trailer));
        written += sizeof(trailer);
      }
    }
    lock.lock();
    if (!s.ok() && error_.ok()) error_ = s;
    bytes_out_ += written;
    job->in.size = 0;
    free_.push_back(std::move(job->in));
    cv_.notify_all();
    if (job->last) return;
  }
}

}  // namespace shardscope::trace
