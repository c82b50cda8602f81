// The runtime protocol's graph run (protocol.h): a bare graph's inputs and
// outputs as named float32 tensors, each {"name": str, "shape": [int...],
// "data": bin (little-endian float32, row-major)}.
#include <cstring>

#include "runtime/process/protocol.h"
#include "runtime/process/protocol_envelopes.h"
#include "wire/msgpack_fields.h"
#include "wire/msgpack_reader.h"
#include "wire/msgpack_writer.h"

namespace shoal::runtime_process {
namespace {

void WriteTensors(wire::MsgpackWriter& w, std::span<const Tensor> tensors) {
  w.ArrayHeader(static_cast<uint32_t>(tensors.size()));
  for (const Tensor& t : tensors) {
    w.MapHeader(3);
    w.Str("name");
    w.Str(t.name);
    w.Str("shape");
    w.ArrayHeader(static_cast<uint32_t>(t.shape.size()));
    for (int64_t d : t.shape) w.Int(d);
    w.Str("data");
    w.Bin(std::string_view(reinterpret_cast<const char*>(t.values.data()), t.values.size() * sizeof(float)));
  }
}

}  // namespace

std::string RunRequest(uint64_t id, std::string_view model, std::span<const Tensor> inputs, RunOutputs what) {
  std::string out;
  const bool top1 = what == RunOutputs::kTop1;
  wire::MsgpackWriter w = RequestEnvelope(&out, "run", id, top1 ? 3 : 2);
  w.Str("model");
  w.Str(model);
  w.Str("inputs");
  WriteTensors(w, inputs);
  if (top1) {
    w.Str("top1");
    w.Bool(true);
  }
  return out;
}

std::string RunReply(uint64_t id, std::span<const Tensor> outputs) {
  std::string out;
  wire::MsgpackWriter w = ReplyEnvelope(&out, id, "ok");
  w.MapHeader(1);
  w.Str("outputs");
  WriteTensors(w, outputs);
  return out;
}

Status ReadTensors(std::string_view raw, std::string_view where, std::vector<Tensor>* tensors) {
  return wire::ForEachItem(raw, where, [&](uint32_t, wire::MsgpackFields& f) -> Status {
    Tensor& t = tensors->emplace_back();
    std::string_view data;
    bool has_data = false;
    SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view key) -> Status {
      if (key == "name") return f.String(&t.name);
      if (key == "shape") {
        uint32_t n = 0;
        if (!f.reader().ReadArrayHeader(&n)) return f.Error("shape: expected an array of sizes");
        for (uint32_t i = 0; i < n; ++i) {
          int64_t d = 0;
          if (!f.reader().ReadInt(&d) || d < 0) return f.Error("shape: expected non-negative sizes");
          t.shape.push_back(d);
        }
        return Status::Ok();
      }
      if (key == "data") {
        has_data = true;
        return f.reader().ReadBin(&data) ? Status::Ok() : f.Error("data: expected float32 values (bin)");
      }
      return f.Skip();
    }));
    if (!has_data) return f.Error("no data");
    size_t count = 1;
    for (int64_t d : t.shape) {
      if (d > 0 && count > (size_t{1} << 40) / static_cast<size_t>(d)) return f.Error("shape: too large");
      count *= static_cast<size_t>(d);
    }
    if (data.size() != count * sizeof(float)) {
      return f.Error("data: " + std::to_string(data.size()) + " bytes for a shape of " + std::to_string(count) +
                     " float32 values");
    }
    t.values.resize(count);
    if (count > 0) std::memcpy(t.values.data(), data.data(), data.size());
    return Status::Ok();
  });
}

Status ReadRunOutputs(std::string_view ok, RunOutputs what, std::vector<Tensor>* outputs) {
  wire::MsgpackReader r(ok);
  wire::MsgpackFields f(r, "run");
  std::string_view raw;
  SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view key) -> Status {
    if (key == "outputs") return r.ReadRaw(&raw) ? Status::Ok() : f.Error("outputs: truncated");
    return f.Skip();
  }));
  if (raw.empty()) return InvalidInput("run: no outputs");
  SHOAL_RETURN_IF_ERROR(ReadTensors(raw, "outputs", outputs));
  if (what != RunOutputs::kTop1) return Status::Ok();
  for (const Tensor& t : *outputs) {
    if (t.shape.empty() || t.shape.back() != 2) {
      return InvalidInput("run: output '" + t.name + "' is not (max, index) pairs, as top1 asks");
    }
    for (size_t k = 1; k < t.values.size(); k += 2) {
      const float index = t.values[k];
      if (!(index >= 0 && index < 16777216.0f) || index != static_cast<float>(static_cast<int64_t>(index))) {
        return InvalidInput("run: output '" + t.name + "' has an index that is not a whole number below 2^24");
      }
    }
  }
  return Status::Ok();
}

}  // namespace shoal::runtime_process
