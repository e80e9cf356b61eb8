// tt::save / tt::load: the file side of safetensors checkpoints — atomic writes (temporary file,
// fsync, rename), careful reads (sizes checked before anything is allocated), tensor bytes.
// The header's format and rules live in header.cpp (Note [safetensors validation]). This is the
// one place in io/ that touches raw tensor bytes: packed CPU copies, never device memory.
#include "tinytorch/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <system_error>
#include <utility>

#include "tinytorch/io/header.h"
#include "tinytorch/ops/factory.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian and tinytorch copies host bytes as they are");
static_assert(sizeof(bool) == 1, "BOOL elements are one byte");

namespace tt {
namespace {

using io::detail::Header;
using io::detail::TensorEntry;

std::string last_error() { return std::error_code(errno, std::generic_category()).message(); }

uint64_t nbytes_of(const TensorEntry& e) { return e.end - e.begin; }

// A temporary file beside `path` (same directory, so rename is atomic), renamed over `path` by
// commit(). Until then the target is untouched; if commit() is never reached (an error, an
// exception) the destructor removes the temporary file.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path) : path_(std::move(path)) {
    static std::atomic<uint64_t> counter{0};
    for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
      tmp_ = path_ + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
      fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ < 0 && errno != EEXIST) fail("cannot create the temporary file " + tmp_);
    }
    if (fd_ < 0) fail("cannot find a free temporary file name, last tried " + tmp_);
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());
  }

  void write(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::write(fd_, p, std::min<size_t>(n, size_t(1) << 30));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        if (w == 0) errno = EIO;
        fail("cannot write the temporary file " + tmp_);
      }
      p += w;
      n -= size_t(w);
    }
  }

  void commit() {
    if (::fsync(fd_) != 0) fail("cannot flush the temporary file " + tmp_ + " to disk");
    int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) fail("cannot close the temporary file " + tmp_);
    if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail("cannot rename " + tmp_ + " over the target");
    committed_ = true;
    // Make the rename itself durable. Best effort: the checkpoint is complete either way.
    size_t slash = path_.find_last_of('/');
    std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path_.substr(0, slash);
    int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw IOError("save: " + path_ + ": " + what + ": " + last_error());
  }

  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

// A file opened for reading whose size is known before anything is read.
class InputFile {
 public:
  InputFile(std::string path, std::string op) : path_(std::move(path)), op_(std::move(op)) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below); it changes
    // nothing for regular files.
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) fail("cannot open the file: " + last_error());
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail("cannot stat the file: " + last_error());
    if (!S_ISREG(st.st_mode)) fail("not a regular file");
    size_ = uint64_t(st.st_size);
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() {
    if (fd_ >= 0) ::close(fd_);
  }

  uint64_t size() const { return size_; }

  void read_at(uint64_t offset, void* data, size_t n) {
    char* p = static_cast<char*>(data);
    while (n > 0) {
      ssize_t r = ::pread(fd_, p, std::min<size_t>(n, size_t(1) << 30), off_t(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) fail("cannot read the file: " + last_error());
      if (r == 0)
        fail(detail::concat("the file ended at byte ", offset, ", before the ", size_,
                            " bytes it had when opened (was it changed while being read?)"));
      p += r;
      n -= size_t(r);
      offset += uint64_t(r);
    }
  }

  // Reads and validates the length field and the header (rule 1 here, the rest in header.cpp).
  Header read_header() {
    if (size_ < 8)
      fail(detail::concat("the file must start with an 8-byte header length, got a file of ", size_, " bytes"));
    uint8_t len_bytes[8];
    read_at(0, len_bytes, 8);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
    if (n > io::detail::kMaxHeaderBytes)
      fail(detail::concat("the header length must be at most ", io::detail::kMaxHeaderBytes, " bytes, got ", n));
    if (n > size_ - 8)
      fail(detail::concat("the header length must fit in the file (", size_ - 8,
                          " bytes after the length field), got ", n));
    std::string text(size_t(n), '\0');
    read_at(8, text.data(), text.size());
    data_start_ = 8 + n;
    return io::detail::parse_header(text, size_ - data_start_, op_, path_);
  }
  uint64_t data_start() const { return data_start_; }

  [[noreturn]] void fail(const std::string& rule) { throw IOError(op_ + ": " + path_ + ": " + rule); }

 private:
  std::string path_, op_;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t data_start_ = 0;
};

}  // namespace

void save(const nn::StateDict& tensors, const std::string& path,
          const std::map<std::string, std::string>& metadata) {
  // The header first (it needs only names, dtypes and shapes); then the data, one tensor at a
  // time, so that at most one packed host copy exists at once.
  Header header;
  header.metadata = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    TT_CHECK(!name.empty(), "save: ", path, ": tensor names must be non-empty");
    TT_CHECK(name != "__metadata__", "save: ", path, ": \"__metadata__\" is the metadata's key, not a tensor name");
    TT_CHECK(t.defined(), "save: ", path, ": tensor ", io::detail::quote_name(name), " is undefined");
    TensorEntry e;
    e.name = name;
    e.dtype = t.dtype();
    e.shape = t.shape();
    e.begin = offset;
    e.end = offset + uint64_t(t.numel()) * t.element_size();
    offset = e.end;
    header.tensors.push_back(std::move(e));
  }
  std::string text = io::detail::write_header(header, path);
  uint8_t len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = uint8_t(uint64_t(text.size()) >> (8 * i));

  AtomicFile file(path);
  file.write(len_bytes, 8);
  file.write(text.data(), text.size());
  for (const auto& [name, t] : tensors) {
    if (t.numel() == 0) continue;
    Tensor packed = t.detach().cpu().contiguous();  // a no-op for a contiguous CPU tensor
    file.write(packed.raw_data_ptr(), size_t(packed.numel()) * packed.element_size());
  }
  file.commit();
}

void save(const nn::Module& module, const std::string& path,
          const std::map<std::string, std::string>& metadata) {
  save(module.state_dict(), path, metadata);
}

nn::StateDict load(const std::string& path) {
  InputFile file(path, "load");
  Header header = file.read_header();
  // Everything is validated: each tensor's bytes lie inside the file, so the allocations below
  // add up to at most the file's size.
  nn::StateDict out;
  for (const TensorEntry& e : header.tensors) {
    Tensor t = empty(e.shape, e.dtype);
    if (nbytes_of(e) > 0) {
      file.read_at(file.data_start() + e.begin, t.raw_data_ptr(), size_t(nbytes_of(e)));
      if (e.dtype == kBool) {
        const uint8_t* bytes = static_cast<const uint8_t*>(t.raw_data_ptr());
        const uint8_t* bad = std::find_if(bytes, bytes + nbytes_of(e), [](uint8_t b) { return b > 1; });
        if (bad != bytes + nbytes_of(e))
          file.fail(detail::concat("tensor ", io::detail::quote_name(e.name), ": BOOL bytes must be 0 or 1, got ",
                                   int(*bad), " at element ", bad - bytes));
      }
    }
    out.insert(e.name, std::move(t));
  }
  return out;
}

nn::LoadResult load(nn::Module& module, const std::string& path, bool strict) {
  nn::StateDict state = load(path);               // file errors: the module is not touched yet
  return module.load_state_dict(state, strict);   // validates everything before writing
}

std::map<std::string, std::string> load_metadata(const std::string& path) {
  InputFile file(path, "load_metadata");
  return file.read_header().metadata;
}

}  // namespace tt
