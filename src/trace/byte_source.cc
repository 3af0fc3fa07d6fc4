#include "trace/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "core/small_file.h"

namespace shardscope::trace {
namespace {

// Raw bytes from a file descriptor or a memory buffer.
class RawInput {
 public:
  virtual ~RawInput() = default;
  virtual StatusOr<size_t> Read(char* dst, size_t size) = 0;
};

class FdInput : public RawInput {
 public:
  FdInput(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  ~FdInput() override { close(fd_); }
  FdInput(const FdInput&) = delete;
  FdInput& operator=(const FdInput&) = delete;

  StatusOr<size_t> Read(char* dst, size_t size) override {
    while (true) {
      ssize_t n = read(fd_, dst, size);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR) return IoError("{}: read failed: {}", name_, std::strerror(errno));
    }
  }

 private:
  const int fd_;
  const std::string name_;
};

class MemoryInput : public RawInput {
 public:
  explicit MemoryInput(std::string_view data) : data_(data) {}
  StatusOr<size_t> Read(char* dst, size_t size) override {
    size_t n = std::min(size, data_.size() - pos_);
    std::memcpy(dst, data_.data() + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

class PlainSource : public ByteSource {
 public:
  explicit PlainSource(std::unique_ptr<RawInput> in, std::string_view prefix)
      : in_(std::move(in)), prefix_(prefix) {}
  StatusOr<size_t> Read(char* dst, size_t size) override {
    if (!prefix_.empty()) {  // bytes already read while sniffing the magic
      size_t n = std::min(size, prefix_.size());
      std::memcpy(dst, prefix_.data(), n);
      prefix_.erase(0, n);
      offset_ += static_cast<int64_t>(n);
      return n;
    }
    ASSIGN_OR_RETURN(size_t n, in_->Read(dst, size));
    offset_ += static_cast<int64_t>(n);
    return n;
  }
  int64_t raw_offset() const override { return offset_; }

 private:
  std::unique_ptr<RawInput> in_;
  std::string prefix_;
  int64_t offset_ = 0;
};

// Inflates gzip members one after another (concatenated members are one stream, as gzip -d does).
class GzipSource : public ByteSource {
 public:
  GzipSource(std::unique_ptr<RawInput> in, std::string_view prefix, std::string name)
      : in_(std::move(in)), name_(std::move(name)), in_buf_(1 << 18) {
    std::memset(&zs_, 0, sizeof(zs_));
    ok_ = inflateInit2(&zs_, 15 + 32) == Z_OK;
    std::memcpy(in_buf_.data(), prefix.data(), prefix.size());
    zs_.next_in = reinterpret_cast<Bytef*>(in_buf_.data());
    zs_.avail_in = static_cast<uInt>(prefix.size());
    consumed_ = static_cast<int64_t>(prefix.size());
  }
  ~GzipSource() override {
    if (ok_) inflateEnd(&zs_);
  }
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;

  bool compressed() const override { return true; }
  int64_t raw_offset() const override { return consumed_ - zs_.avail_in; }

  StatusOr<size_t> Read(char* dst, size_t size) override {
    if (!ok_) return InternalError("{}: zlib inflateInit2 failed", name_);
    zs_.next_out = reinterpret_cast<Bytef*>(dst);
    zs_.avail_out = static_cast<uInt>(size);
    while (zs_.avail_out == size) {
      if (zs_.avail_in == 0 && !in_eof_) {
        ASSIGN_OR_RETURN(size_t n, in_->Read(in_buf_.data(), in_buf_.size()));
        consumed_ += static_cast<int64_t>(n);
        zs_.next_in = reinterpret_cast<Bytef*>(in_buf_.data());
        zs_.avail_in = static_cast<uInt>(n);
        if (n == 0) in_eof_ = true;
      }
      if (zs_.avail_in == 0 && in_eof_) {
        if (!stream_end_) {
          return DataLoss("{}: gzip data truncated at compressed byte {}", name_, raw_offset());
        }
        break;  // clean end of the last member
      }
      if (stream_end_) {  // another member follows
        inflateReset(&zs_);
        stream_end_ = false;
      }
      int rc = inflate(&zs_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        stream_end_ = true;
      } else if (rc == Z_BUF_ERROR) {
        continue;  // needs more input
      } else if (rc != Z_OK) {
        return DataLoss("{}: corrupt gzip data at compressed byte {}: {}", name_, raw_offset(),
                        zs_.msg ? zs_.msg : "inflate failed");
      }
    }
    return size - zs_.avail_out;
  }

 private:
  std::unique_ptr<RawInput> in_;
  const std::string name_;
  std::vector<char> in_buf_;
  z_stream zs_;
  bool ok_ = false;
  bool in_eof_ = false;
  bool stream_end_ = false;
  int64_t consumed_ = 0;
};

// Reads the first bytes of `in` and picks plain or gzip.
StatusOr<std::unique_ptr<ByteSource>> Sniff(std::unique_ptr<RawInput> in, std::string name) {
  char magic[2];
  size_t got = 0;
  while (got < 2) {
    ASSIGN_OR_RETURN(size_t n, in->Read(magic + got, 2 - got));
    if (n == 0) break;
    got += n;
  }
  std::string_view prefix(magic, got);
  if (got == 2 && static_cast<unsigned char>(magic[0]) == 0x1f &&
      static_cast<unsigned char>(magic[1]) == 0x8b) {
    return std::unique_ptr<ByteSource>(
        std::make_unique<GzipSource>(std::move(in), prefix, std::move(name)));
  }
  return std::unique_ptr<ByteSource>(std::make_unique<PlainSource>(std::move(in), prefix));
}

class ReadAhead final : public ByteSource {
 public:
  ReadAhead(std::unique_ptr<ByteSource> inner, size_t block_bytes, size_t blocks)
      : inner_(std::move(inner)),
        block_bytes_(std::max<size_t>(block_bytes, 1)),
        max_blocks_(std::max<size_t>(blocks, 1)) {
    reader_ = std::thread([this] { Fill(); });
  }
  ~ReadAhead() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    reader_.join();
  }
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  bool compressed() const override { return inner_->compressed(); }
  int64_t raw_offset() const override { return raw_offset_; }

  StatusOr<size_t> Read(char* dst, size_t size) override {
    size_t done = 0;
    while (done < size) {
      if (pos_ == current_.bytes.size()) {
        if (current_.end) break;
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !ready_.empty(); });
        current_ = std::move(ready_.front());
        ready_.pop_front();
        pos_ = 0;
        cv_.notify_all();
        if (!current_.status.ok()) {
          if (done > 0) {  // hand out what came before the error first
            pending_error_ = true;
            break;
          }
          current_.end = true;
          return current_.status;
        }
      }
      size_t n = std::min(size - done, current_.bytes.size() - pos_);
      std::memcpy(dst + done, current_.bytes.data() + pos_, n);
      pos_ += n;
      done += n;
      if (pos_ == current_.bytes.size()) raw_offset_ = current_.raw_offset;
      if (done > 0 && current_.end && pos_ == current_.bytes.size()) break;
    }
    if (done == 0 && pending_error_) {
      pending_error_ = false;
      current_.end = true;
      return current_.status;
    }
    return done;
  }

 private:
  struct Block {
    std::vector<char> bytes;
    int64_t raw_offset = 0;  // the inner source's after this block
    bool end = false;        // the last block (empty, or an error)
    Status status;
  };

  void Fill() {
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || ready_.size() < max_blocks_; });
        if (stop_) return;
      }
      Block b;
      b.bytes.resize(block_bytes_);
      StatusOr<size_t> n = inner_->Read(b.bytes.data(), b.bytes.size());
      if (!n.ok()) {
        b.bytes.clear();
        b.status = n.status();
        b.end = true;
      } else {
        b.bytes.resize(*n);
        b.end = *n == 0;
      }
      b.raw_offset = inner_->raw_offset();
      bool last = b.end;
      {
        std::lock_guard<std::mutex> lock(mu_);
        ready_.push_back(std::move(b));
      }
      cv_.notify_all();
      if (last) return;
    }
  }

  std::unique_ptr<ByteSource> inner_;
  const size_t block_bytes_;
  const size_t max_blocks_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Block> ready_;
  bool stop_ = false;
  Block current_;  // the block being handed out (caller's thread only)
  size_t pos_ = 0;
  int64_t raw_offset_ = 0;
  bool pending_error_ = false;
  std::thread reader_;
};

class FdRandomAccess : public RandomAccessInput {
 public:
  FdRandomAccess(int fd, int64_t size, std::string name)
      : fd_(fd), size_(size), name_(std::move(name)) {}
  ~FdRandomAccess() override { close(fd_); }
  FdRandomAccess(const FdRandomAccess&) = delete;
  FdRandomAccess& operator=(const FdRandomAccess&) = delete;

  int64_t size() const override { return size_; }
  StatusOr<size_t> ReadAt(int64_t offset, char* dst, size_t n) const override {
    size_t got = 0;
    while (got < n) {
      ssize_t r = pread(fd_, dst + got, n - got, static_cast<off_t>(offset) + got);
      if (r == 0) break;
      if (r < 0) {
        if (errno == EINTR) continue;
        return IoError("{}: read failed: {}", name_, std::strerror(errno));
      }
      got += static_cast<size_t>(r);
    }
    return got;
  }

 private:
  const int fd_;
  const int64_t size_;
  const std::string name_;
};

class MemoryRandomAccessInput : public RandomAccessInput {
 public:
  explicit MemoryRandomAccessInput(std::string_view data) : data_(data) {}
  int64_t size() const override { return static_cast<int64_t>(data_.size()); }
  StatusOr<size_t> ReadAt(int64_t offset, char* dst, size_t n) const override {
    if (offset < 0 || static_cast<size_t>(offset) >= data_.size()) return size_t{0};
    size_t k = std::min(n, data_.size() - static_cast<size_t>(offset));
    std::memcpy(dst, data_.data() + offset, k);
    return k;
  }

 private:
  std::string_view data_;
};

}  // namespace

StatusOr<std::unique_ptr<RandomAccessInput>> OpenRandomAccess(const std::string& path) {
  // A FIFO or a device is refused before any read: it could block or never end.
  ASSIGN_OR_RETURN(const int fd, OpenRegularFile(path, "the trace"));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return IoError("{}: cannot stat the trace: {}", path, std::strerror(errno));
  }
  return std::unique_ptr<RandomAccessInput>(
      std::make_unique<FdRandomAccess>(fd, static_cast<int64_t>(st.st_size), path));
}

std::unique_ptr<ByteSource> ReadAheadSource(std::unique_ptr<ByteSource> inner, size_t block_bytes,
                                            size_t blocks) {
  return std::make_unique<ReadAhead>(std::move(inner), block_bytes, blocks);
}

std::unique_ptr<RandomAccessInput> MemoryRandomAccess(std::string_view data) {
  return std::make_unique<MemoryRandomAccessInput>(data);
}

StatusOr<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path) {
  ASSIGN_OR_RETURN(const int fd, OpenRegularFile(path, "the trace"));
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return Sniff(std::make_unique<FdInput>(fd, path), path);
}

std::unique_ptr<ByteSource> MemoryByteSource(std::string_view data, std::string name) {
  auto source = Sniff(std::make_unique<MemoryInput>(data), std::move(name));
  return std::move(source).value();  // memory reads cannot fail
}

}  // namespace shardscope::trace
