#include "sluice/simulate/binary_format.h"

#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "sluice/core/status_macros.h"
#include "sluice/simulate/input_file.h"
#include "sluice/simulate/traffic_reader.h"

namespace sluice::simulate {
namespace {

constexpr std::uint8_t kSubjectTag = 0x01;
constexpr std::uint8_t kPolicyTag = 0x02;
constexpr std::uint8_t kAppTag = 0x03;
constexpr std::uint8_t kEventTag = 0x10;  // + RecordedOutcome
constexpr std::size_t kFlushBytes = std::size_t{1} << 20;
// Names are subjects (at most 1 024 bytes), policy and app names: 64 KiB bounds a record.
constexpr std::size_t kMaxNameBytes = 1 << 16;

std::string header() {
  std::string bytes(kBinaryMagic);
  bytes.push_back(static_cast<char>(kBinaryVersion & 0xff));
  bytes.push_back(static_cast<char>(kBinaryVersion >> 8));
  bytes.push_back(static_cast<char>(kBinaryHeaderBytes));
  bytes.push_back(0);
  bytes.append(4, '\0');  // flags
  return bytes;
}

class BinaryReader final : public TrafficReader {
 public:
  BinaryReader(InputFile file, TrafficNames& names) : file_(std::move(file)), names_(names) {}

  Status read_header() {
    SLUICE_RETURN_IF_ERROR(file_.want(kBinaryHeaderBytes));
    if (file_.available() < kBinaryHeaderBytes ||
        std::string_view(file_.data(), kBinaryMagic.size()) != kBinaryMagic) {
      return invalid_argument(file_.path() + ": not a Sluice recording (no SLUICETR header)");
    }
    const auto* bytes = reinterpret_cast<const unsigned char*>(file_.data());
    const unsigned version = bytes[8] | (bytes[9] << 8);
    const unsigned length = bytes[10] | (bytes[11] << 8);
    const unsigned flags =
        bytes[12] | (bytes[13] << 8) | (bytes[14] << 16) | (static_cast<unsigned>(bytes[15]) << 24);
    if (version != kBinaryVersion) {
      return invalid_argument(file_.path() + ": recording format version " +
                              std::to_string(version) + " (this sluice reads version " +
                              std::to_string(kBinaryVersion) + ")");
    }
    if (length != kBinaryHeaderBytes || flags != 0) {
      return invalid_argument(file_.path() + ": header: unknown length or flags");
    }
    file_.consume(kBinaryHeaderBytes);
    return Status();
  }

  StatusOr<bool> next(Event& event) override {
    for (;;) {
      // Enough for any event record at once: the hot loop reads varints without bounds checks
      // beyond this one.
      if (file_.available() < 64) {
        SLUICE_RETURN_IF_ERROR(file_.want(64));
        if (file_.at_end()) return false;
      }
      const std::uint64_t record_offset = file_.offset();
      const char* at = file_.data();
      const char* const end = at + file_.available();
      const auto tag = static_cast<std::uint8_t>(*at++);
      if (tag >= kEventTag && tag <= kEventTag + 2) {
        std::uint64_t delta = 0, subject = 0, cost = 0, policy = 0, app = 0;
        if (!varint(at, end, delta) || !varint(at, end, subject) || !varint(at, end, cost) ||
            !varint(at, end, policy) || !varint(at, end, app)) {
          return truncated(record_offset);
        }
        if (subject >= subjects_.size() || policy > policies_.size() || app > apps_.size()) {
          return bad(record_offset, "an event names an undefined subject, policy or app");
        }
        if (cost > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
            delta >
                static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max() - previous_)) {
          return bad(record_offset, "cost or time out of range");
        }
        previous_ += static_cast<Micros>(delta);
        event.time = previous_;
        event.subject = subjects_[subject];
        event.cost = static_cast<std::int64_t>(cost);
        event.policy = policy == 0 ? kUnnamed : policies_[policy - 1];
        event.app = app == 0 ? kUnnamed : apps_[app - 1];
        file_.consume(static_cast<std::size_t>(at - file_.data()));
        return true;
      }
      if (tag < kSubjectTag || tag > kAppTag) return bad(record_offset, "unknown record tag");
      std::uint64_t length = 0;
      if (!varint(at, end, length)) return truncated(record_offset);
      if (length > kMaxNameBytes) return bad(record_offset, "a name longer than 64 KiB");
      const std::size_t head = static_cast<std::size_t>(at - file_.data());
      SLUICE_RETURN_IF_ERROR(file_.want(head + length));
      if (file_.available() < head + length) return truncated(record_offset);
      const std::string_view name(file_.data() + head, length);
      switch (tag) {
        case kSubjectTag:
          subjects_.push_back(names_.subjects.intern(name));
          break;
        case kPolicyTag:
          policies_.push_back(names_.policies.intern(name));
          break;
        default:
          apps_.push_back(names_.apps.intern(name));
          break;
      }
      file_.consume(head + length);
    }
  }

  const std::string& path() const override { return file_.path(); }

 private:
  static bool varint(const char*& at, const char* end, std::uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64 && at < end; shift += 7) {
      const auto byte = static_cast<std::uint8_t>(*at++);
      value |= std::uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }
  Status truncated(std::uint64_t offset) const {
    return Status(StatusCode::kDataLoss, file_.path() + ": byte " + std::to_string(offset) +
                                             ": record cut short (a truncated recording?)");
  }
  Status bad(std::uint64_t offset, std::string_view why) const {
    return invalid_argument(file_.path() + ": byte " + std::to_string(offset) + ": " +
                            std::string(why));
  }

  InputFile file_;
  TrafficNames& names_;
  // File-local index -> the id in names_.
  std::vector<std::uint32_t> subjects_;
  std::vector<std::uint32_t> policies_;
  std::vector<std::uint32_t> apps_;
  Micros previous_ = 0;
};

}  // namespace

StatusOr<BinaryWriter> BinaryWriter::create(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return invalid_argument(path + ": cannot create: " + std::strerror(errno));
  }
  BinaryWriter writer(path, file);
  writer.buffer_ = header();
  return writer;
}

BinaryWriter::BinaryWriter(BinaryWriter&& other) noexcept
    : path_(std::move(other.path_)),
      file_(std::exchange(other.file_, nullptr)),
      names_(std::move(other.names_)),
      buffer_(std::move(other.buffer_)),
      previous_(other.previous_),
      events_(other.events_),
      flushed_(other.flushed_) {}

BinaryWriter::~BinaryWriter() {
  if (file_ != nullptr) (void)close();
}

void BinaryWriter::put_varint(std::uint64_t value) {
  while (value >= 0x80) {
    buffer_.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  buffer_.push_back(static_cast<char>(value));
}

std::uint32_t BinaryWriter::define(NameTable& table, std::uint8_t tag, std::string_view name) {
  const std::size_t before = table.size();
  const std::uint32_t id = table.intern(name);
  if (table.size() != before) {
    buffer_.push_back(static_cast<char>(tag));
    put_varint(name.size());
    buffer_.append(name);
  }
  return id;
}

Status BinaryWriter::write(Micros time, std::string_view subject, std::string_view policy,
                           std::string_view app, std::int64_t cost, RecordedOutcome outcome) {
  if (file_ == nullptr) return Status(StatusCode::kFailedPrecondition, path_ + ": closed");
  if (time < previous_) {
    return invalid_argument(path_ + ": time " + std::to_string(time) +
                            " is earlier than the previous event's (" + std::to_string(previous_) +
                            ")");
  }
  if (cost < 0) return invalid_argument(path_ + ": cost: must not be negative");
  if (subject.size() > kMaxNameBytes || policy.size() > kMaxNameBytes ||
      app.size() > kMaxNameBytes) {
    return invalid_argument(path_ + ": a name longer than 64 KiB");
  }
  const std::uint32_t s = define(names_.subjects, kSubjectTag, subject);
  const std::uint64_t p = policy.empty() ? 0 : define(names_.policies, kPolicyTag, policy) + 1;
  const std::uint64_t a = app.empty() ? 0 : define(names_.apps, kAppTag, app) + 1;
  buffer_.push_back(static_cast<char>(kEventTag + static_cast<std::uint8_t>(outcome)));
  put_varint(static_cast<std::uint64_t>(time - previous_));
  put_varint(s);
  put_varint(static_cast<std::uint64_t>(cost));
  put_varint(p);
  put_varint(a);
  previous_ = time;
  ++events_;
  if (buffer_.size() >= kFlushBytes) {
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
      return invalid_argument(path_ + ": cannot write: " + std::strerror(errno));
    }
    flushed_ += buffer_.size();
    buffer_.clear();
  }
  return Status();
}

Status BinaryWriter::flush() {
  if (file_ == nullptr) return Status(StatusCode::kFailedPrecondition, path_ + ": closed");
  const bool written = std::fwrite(buffer_.data(), 1, buffer_.size(), file_) == buffer_.size();
  flushed_ += buffer_.size();
  buffer_.clear();
  if (!written || std::fflush(file_) != 0) {
    return invalid_argument(path_ + ": cannot write: " + std::strerror(errno));
  }
  return Status();
}

Status BinaryWriter::close() {
  if (file_ == nullptr) return Status();
  const bool written = std::fwrite(buffer_.data(), 1, buffer_.size(), file_) == buffer_.size();
  flushed_ += buffer_.size();
  buffer_.clear();
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!written || !closed)
    return invalid_argument(path_ + ": cannot write: " + std::strerror(errno));
  return Status();
}

StatusOr<std::unique_ptr<TrafficReader>> open_traffic(const std::string& path, TrafficNames& names,
                                                      const OpenOptions& options) {
  {
    SLUICE_ASSIGN_OR_RETURN(InputFile probe, InputFile::open(path));
    SLUICE_RETURN_IF_ERROR(probe.want(kBinaryMagic.size()));
    const bool binary = probe.available() >= kBinaryMagic.size() &&
                        std::string_view(probe.data(), kBinaryMagic.size()) == kBinaryMagic;
    if (binary) {
      auto reader = std::make_unique<BinaryReader>(std::move(probe), names);
      SLUICE_RETURN_IF_ERROR(reader->read_header());
      return std::unique_ptr<TrafficReader>(std::move(reader));
    }
  }
  return open_json_lines(path, names, options.json);
}

}  // namespace sluice::simulate
