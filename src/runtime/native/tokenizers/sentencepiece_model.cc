// Protocol buffers' wire format, as much of it as ModelProto uses: each field
// a key (number << 3 | wire type) then a varint, 4 or 8 fixed bytes, or a
// length and that many bytes. Field numbers are sentencepiece_model.proto's.
#include "runtime/native/tokenizers/sentencepiece_model.h"

#include <cstring>

#include <simdjson.h>

namespace shoal::native::tok {
namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

// One message's fields, read in order. Next() fails on anything the format
// does not allow (a truncated field, a group, a length past the end).
class FieldReader {
 public:
  FieldReader(std::string_view bytes, std::string_view what) : rest_(bytes), what_(what) {}

  struct Field {
    uint32_t number = 0;
    uint32_t wire = 0;
    uint64_t varint = 0;     // kVarint
    uint32_t fixed32 = 0;    // kFixed32
    std::string_view bytes;  // kBytes
  };

  // False at the end of the message; *status says whether it ended well.
  bool Next(Field* f, Status* status) {
    if (rest_.empty()) return false;
    uint64_t key = 0;
    if (!Varint(&key)) return Fail(status, "a field's key runs past the end");
    f->number = static_cast<uint32_t>(key >> 3);
    f->wire = static_cast<uint32_t>(key & 7);
    switch (f->wire) {
      case kVarint:
        if (!Varint(&f->varint)) return Fail(status, "a number runs past the end");
        return true;
      case kFixed64:
        if (rest_.size() < 8) return Fail(status, "a field runs past the end");
        rest_.remove_prefix(8);
        return true;
      case kFixed32:
        if (rest_.size() < 4) return Fail(status, "a field runs past the end");
        std::memcpy(&f->fixed32, rest_.data(), 4);  // little-endian, as this machine
        rest_.remove_prefix(4);
        return true;
      case kBytes: {
        uint64_t n = 0;
        if (!Varint(&n) || n > rest_.size())
          return Fail(status, "a field's length runs past the end");
        f->bytes = rest_.substr(0, n);
        rest_.remove_prefix(n);
        return true;
      }
      default:
        return Fail(status, "wire type " + std::to_string(f->wire) +
                                " is not protobuf's (is this a model file?)");
    }
  }

 private:
  bool Varint(uint64_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && !rest_.empty(); shift += 7) {
      const auto byte = static_cast<uint8_t>(rest_.front());
      rest_.remove_prefix(1);
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) {
        *out = v;
        return true;
      }
    }
    return false;
  }
  bool Fail(Status* status, const std::string& why) {
    *status = Status(Code::kModelLoadFailed, std::string(what_) + ": " + why);
    rest_ = {};
    return false;
  }

  std::string_view rest_;
  std::string_view what_;
};

// Calls `fn` on each field of one message; the first error, its or the
// reader's, ends the walk.
template <typename Fn>
Status ForEachField(std::string_view bytes, std::string_view what, Fn fn) {
  FieldReader r(bytes, what);
  FieldReader::Field f;
  Status status;
  while (r.Next(&f, &status)) SHOAL_RETURN_IF_ERROR(fn(f));
  return status;
}

Status Malformed(std::string_view what, const std::string& why) {
  return Status(Code::kModelLoadFailed, std::string(what) + ": " + why);
}

Status ReadPiece(std::string_view bytes, std::string_view what, SentencePieceModel::Piece* piece) {
  return ForEachField(bytes, what, [&](const FieldReader::Field& f) {
    if (f.number == 1 && f.wire == kBytes) {
      if (!simdjson::validate_utf8(f.bytes.data(), f.bytes.size()))
        return Malformed(what, "a piece is not UTF-8");
      piece->piece = std::string(f.bytes);
    } else if (f.number == 2 && f.wire == kFixed32) {
      std::memcpy(&piece->score, &f.fixed32, 4);
    } else if (f.number == 3 && f.wire == kVarint) {
      if (f.varint < 1 || f.varint > 6) {
        return Malformed(what,
                         "piece type " + std::to_string(f.varint) + " is not SentencePiece's");
      }
      piece->type = static_cast<SentencePieceModel::PieceType>(f.varint);
    }
    return Status::Ok();
  });
}

Status ReadTrainerSpec(std::string_view bytes, std::string_view what, SentencePieceModel* m) {
  return ForEachField(bytes, what, [&](const FieldReader::Field& f) {
    if (f.wire != kVarint) return Status::Ok();
    // int32 fields: a negative id is sent as a 64-bit two's complement.
    const auto as_int = static_cast<int32_t>(static_cast<int64_t>(f.varint));
    if (f.number == 3) {
      if (f.varint < 1 || f.varint > 4) {
        return Malformed(what,
                         "model type " + std::to_string(f.varint) + " is not SentencePiece's");
      }
      m->model_type = static_cast<SentencePieceModel::ModelType>(f.varint);
    }
    if (f.number == 35) m->byte_fallback = f.varint != 0;
    if (f.number == 40) m->unk_id = as_int;
    if (f.number == 41) m->bos_id = as_int;
    if (f.number == 42) m->eos_id = as_int;
    if (f.number == 43) m->pad_id = as_int;
    return Status::Ok();
  });
}

Status ReadNormalizerSpec(std::string_view bytes, std::string_view what, SentencePieceModel* m) {
  return ForEachField(bytes, what, [&](const FieldReader::Field& f) {
    if (f.number == 1 && f.wire == kBytes) m->normalizer_name = std::string(f.bytes);
    if (f.number == 2 && f.wire == kBytes) m->precompiled_charsmap = std::string(f.bytes);
    if (f.number == 3 && f.wire == kVarint) m->add_dummy_prefix = f.varint != 0;
    if (f.number == 4 && f.wire == kVarint) m->remove_extra_whitespaces = f.varint != 0;
    if (f.number == 5 && f.wire == kVarint) m->escape_whitespaces = f.varint != 0;
    return Status::Ok();
  });
}

}  // namespace

Result<SentencePieceModel> ParseSentencePieceModel(std::string_view bytes, std::string_view what) {
  SentencePieceModel m;
  SHOAL_RETURN_IF_ERROR(ForEachField(bytes, what, [&](const FieldReader::Field& f) {
    if (f.wire != kBytes) return Status::Ok();
    if (f.number == 1) {
      SHOAL_RETURN_IF_ERROR(ReadPiece(f.bytes, what, &m.pieces.emplace_back()));
    } else if (f.number == 2) {
      SHOAL_RETURN_IF_ERROR(ReadTrainerSpec(f.bytes, what, &m));
    } else if (f.number == 3) {
      SHOAL_RETURN_IF_ERROR(ReadNormalizerSpec(f.bytes, what, &m));
    }
    return Status::Ok();
  }));
  if (m.pieces.empty()) return Malformed(what, "no pieces (is this a model file?)");
  const auto n = static_cast<int32_t>(m.pieces.size());
  if (m.unk_id < 0 || m.unk_id >= n ||
      m.pieces[m.unk_id].type != SentencePieceModel::PieceType::kUnknown) {
    return Malformed(what,
                     "unk_id " + std::to_string(m.unk_id) + " is not the model's unknown piece");
  }
  for (int32_t id : {m.bos_id, m.eos_id, m.pad_id}) {
    if (id >= n) return Malformed(what, "special id " + std::to_string(id) + " is past the pieces");
  }
  return m;
}

}  // namespace shoal::native::tok
