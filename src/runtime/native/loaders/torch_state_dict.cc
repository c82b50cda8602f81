#include "runtime/native/loaders/torch_state_dict.h"

#include <cstring>
#include <memory>

#include "common/file.h"
#include "runtime/native/kernels/cpu/kernels.h"

namespace shoal::native {
namespace {

uint32_t U16(std::string_view b, size_t at) {
  return static_cast<uint8_t>(b[at]) | static_cast<uint32_t>(static_cast<uint8_t>(b[at + 1])) << 8;
}
uint32_t U32(std::string_view b, size_t at) { return U16(b, at) | U16(b, at + 2) << 16; }

// The stored entries of a zip, by name, as views of `bytes`.
Result<std::map<std::string, std::string_view>> ZipEntries(std::string_view bytes, const std::string& what) {
  auto bad = [&](const std::string& why) { return InvalidInput(what + ": not a torch.save zip (" + why + ")"); };
  // The end-of-central-directory record: 22 bytes and a comment of up to 64 KiB.
  size_t eocd = std::string_view::npos;
  for (size_t i = bytes.size() >= 22 ? bytes.size() - 22 + 1 : 0; i-- > 0 && bytes.size() - i <= 22 + 65535;) {
    if (U32(bytes, i) == 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd == std::string_view::npos) return bad("no end of central directory");
  const uint32_t count = U16(bytes, eocd + 10);
  size_t at = U32(bytes, eocd + 16);
  std::map<std::string, std::string_view> entries;
  for (uint32_t k = 0; k < count; ++k) {
    if (at + 46 > bytes.size() || U32(bytes, at) != 0x02014b50) return bad("a broken central directory");
    const uint32_t method = U16(bytes, at + 10), size = U32(bytes, at + 20), stored = U32(bytes, at + 24);
    const uint32_t name_len = U16(bytes, at + 28), extra_len = U16(bytes, at + 30), comment_len = U16(bytes, at + 32);
    const uint32_t local = U32(bytes, at + 42);
    if (at + 46 + name_len > bytes.size()) return bad("a name past the end");
    const std::string name(bytes.substr(at + 46, name_len));
    if (size == 0xffffffffu || local == 0xffffffffu) return bad("zip64 entries are not supported");
    if (method != 0 || size != stored) return bad("entry " + name + " is compressed");
    if (local + 30 > bytes.size() || U32(bytes, local) != 0x04034b50) return bad("entry " + name + " has no header");
    const size_t data = size_t{local} + 30 + U16(bytes, local + 26) + U16(bytes, local + 28);
    if (data + size > bytes.size()) return bad("entry " + name + " runs past the end");
    entries[name] = bytes.substr(data, size);
    at += 46 + size_t{name_len} + extra_len + comment_len;
  }
  return entries;
}

// A pickled value: the few kinds a state dict is made of.
struct Value;
using Ref = std::shared_ptr<Value>;
struct Value {
  enum Kind { kNone, kBool, kInt, kString, kTuple, kList, kDict, kGlobal, kStorage, kTensor } kind = kNone;
  int64_t number = 0;
  std::string text;         // a string; a global's "module.name"; a storage's key
  std::string dtype;        // a storage's: Float, Half, BFloat16
  std::vector<Ref> items;   // a tuple's or list's; a dict's keys and values, alternating
  Ref storage;              // a tensor's
  std::vector<int64_t> shape, stride;
};

Ref Make(Value::Kind kind) {
  auto v = std::make_shared<Value>();
  v->kind = kind;
  return v;
}

// The state dict's pickle, read opcode by opcode (protocols 2 to 5).
class Unpickler {
 public:
  Unpickler(std::string_view bytes, std::string what) : b_(bytes), what_(std::move(what)) {}

  Result<Ref> Run() {
    while (pos_ < b_.size()) {
      const uint8_t op = static_cast<uint8_t>(b_[pos_++]);
      if (op == '.') {  // STOP
        if (stack_.size() != 1) return Bad("STOP with " + std::to_string(stack_.size()) + " values");
        return stack_.back();
      }
      SHOAL_RETURN_IF_ERROR(Step(op));
    }
    return Bad("no STOP");
  }

 private:
  Status Bad(const std::string& why) const {
    return InvalidInput(what_ + ": data.pkl at byte " + std::to_string(pos_) + ": " + why);
  }
  Status Need(size_t n) const { return pos_ + n <= b_.size() ? Status::Ok() : Bad("truncated"); }
  Result<uint64_t> Uint(size_t n) {
    SHOAL_RETURN_IF_ERROR(Need(n));
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(b_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  }
  Result<std::string> Bytes(size_t n) {
    SHOAL_RETURN_IF_ERROR(Need(n));
    std::string s(b_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  Result<std::string> Line() {
    const size_t end = b_.find('\n', pos_);
    if (end == std::string_view::npos) return Bad("an unterminated line");
    std::string s(b_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  Result<Ref> Pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) return Bad("pop from an empty stack");
    Ref v = stack_.back();
    stack_.pop_back();
    return v;
  }
  // The values above the topmost mark, which goes.
  Result<std::vector<Ref>> PopMark() {
    if (marks_.empty()) return Bad("no MARK");
    const size_t at = marks_.back();
    marks_.pop_back();
    std::vector<Ref> items(stack_.begin() + static_cast<ptrdiff_t>(at), stack_.end());
    stack_.resize(at);
    return items;
  }
  Ref Tuple(std::vector<Ref> items) {
    Ref t = Make(Value::kTuple);
    t->items = std::move(items);
    return t;
  }
  Status Push(Ref v) {
    stack_.push_back(std::move(v));
    return Status::Ok();
  }
  Status Memo(uint64_t key) {
    if (stack_.empty()) return Bad("memoize with an empty stack");
    memo_[key] = stack_.back();
    return Status::Ok();
  }
  Status Get(uint64_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) return Bad("no memo entry " + std::to_string(key));
    return Push(it->second);
  }
  Status Global(const std::string& module, const std::string& name) {
    Ref g = Make(Value::kGlobal);
    g->text = module + "." + name;
    static constexpr std::string_view kAllowed[] = {
        "collections.OrderedDict",   "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_parameter",
        "torch.FloatStorage",        "torch.HalfStorage",               "torch.BFloat16Storage"};
    for (std::string_view a : kAllowed) {
      if (g->text == a) return Push(std::move(g));
    }
    return Bad("global " + g->text + " is not a part of a state dict of float tensors");
  }
  Status SetItems(std::vector<Ref> kv) {
    SHOAL_ASSIGN_OR_RETURN(Ref dict, Pop());
    if (dict->kind != Value::kDict || kv.size() % 2 != 0) return Bad("SETITEMS on a non-dict");
    for (auto& x : kv) dict->items.push_back(std::move(x));
    return Push(std::move(dict));
  }
  Status Appends(std::vector<Ref> items) {
    SHOAL_ASSIGN_OR_RETURN(Ref list, Pop());
    if (list->kind != Value::kList) return Bad("APPENDS on a non-list");
    for (auto& x : items) list->items.push_back(std::move(x));
    return Push(std::move(list));
  }
  static bool Ints(const Ref& v, std::vector<int64_t>* out) {
    if (v->kind != Value::kTuple) return false;
    for (const Ref& x : v->items) {
      if (x->kind != Value::kInt) return false;
      out->push_back(x->number);
    }
    return true;
  }
  // callable(*args) for the allowed globals.
  Status Reduce() {
    SHOAL_ASSIGN_OR_RETURN(Ref args, Pop());
    SHOAL_ASSIGN_OR_RETURN(Ref fn, Pop());
    if (fn->kind != Value::kGlobal || args->kind != Value::kTuple) return Bad("REDUCE of a non-global");
    const auto& a = args->items;
    if (fn->text == "collections.OrderedDict") return Push(Make(Value::kDict));
    if (fn->text == "torch._utils._rebuild_parameter") {
      if (a.empty() || a[0]->kind != Value::kTensor) return Bad("_rebuild_parameter of a non-tensor");
      return Push(a[0]);
    }
    if (fn->text == "torch._utils._rebuild_tensor_v2") {
      Ref t = Make(Value::kTensor);
      if (a.size() < 4 || a[0]->kind != Value::kStorage || a[1]->kind != Value::kInt || !Ints(a[2], &t->shape) ||
          !Ints(a[3], &t->stride)) {
        return Bad("_rebuild_tensor_v2 with unexpected arguments");
      }
      t->storage = a[0];
      t->number = a[1]->number;  // the storage offset, in elements
      return Push(std::move(t));
    }
    return Bad(fn->text + " cannot be called");
  }
  // ('storage', torch.XStorage, key, location, numel): a storage entry.
  Status PersistentLoad() {
    SHOAL_ASSIGN_OR_RETURN(Ref pid, Pop());
    const auto& a = pid->items;
    if (pid->kind != Value::kTuple || a.size() < 3 || a[0]->text != "storage" || a[1]->kind != Value::kGlobal ||
        a[2]->kind != Value::kString) {
      return Bad("a persistent id that is not a storage");
    }
    Ref s = Make(Value::kStorage);
    s->text = a[2]->text;
    s->dtype = a[1]->text.substr(std::strlen("torch."));
    s->dtype.resize(s->dtype.size() - std::strlen("Storage"));
    return Push(std::move(s));
  }

  Status Step(uint8_t op) {
    switch (op) {
      case 0x80: return Uint(1).status();                                    // PROTO
      case 0x95: return Uint(8).status();                                    // FRAME
      case '(': marks_.push_back(stack_.size()); return Status::Ok();        // MARK
      case '}': return Push(Make(Value::kDict));                             // EMPTY_DICT
      case ']': return Push(Make(Value::kList));                             // EMPTY_LIST
      case ')': return Push(Make(Value::kTuple));                            // EMPTY_TUPLE
      case 'N': return Push(Make(Value::kNone));                             // NONE
      case 0x88: case 0x89: {                                                // NEWTRUE, NEWFALSE
        Ref v = Make(Value::kBool);
        v->number = op == 0x88;
        return Push(std::move(v));
      }
      case 'K': case 'M': case 'J': {                                        // BININT1, BININT2, BININT
        SHOAL_ASSIGN_OR_RETURN(uint64_t u, Uint(op == 'K' ? 1 : op == 'M' ? 2 : 4));
        Ref v = Make(Value::kInt);
        v->number = op == 'J' ? static_cast<int32_t>(static_cast<uint32_t>(u)) : static_cast<int64_t>(u);
        return Push(std::move(v));
      }
      case 0x8a: {                                                           // LONG1
        SHOAL_ASSIGN_OR_RETURN(uint64_t n, Uint(1));
        if (n > 8) return Bad("an integer wider than 64 bits");
        SHOAL_ASSIGN_OR_RETURN(uint64_t u, Uint(n));
        if (n > 0 && n < 8 && (u >> (8 * n - 1)) & 1) u |= ~uint64_t{0} << (8 * n);  // sign-extend
        Ref v = Make(Value::kInt);
        v->number = static_cast<int64_t>(u);
        return Push(std::move(v));
      }
      case 'X': case 0x8c: {                                                 // BINUNICODE, SHORT_BINUNICODE
        SHOAL_ASSIGN_OR_RETURN(uint64_t n, Uint(op == 'X' ? 4 : 1));
        Ref v = Make(Value::kString);
        SHOAL_ASSIGN_OR_RETURN(v->text, Bytes(n));
        return Push(std::move(v));
      }
      case 'c': {                                                            // GLOBAL
        SHOAL_ASSIGN_OR_RETURN(std::string module, Line());
        SHOAL_ASSIGN_OR_RETURN(std::string name, Line());
        return Global(module, name);
      }
      case 0x93: {                                                           // STACK_GLOBAL
        SHOAL_ASSIGN_OR_RETURN(Ref name, Pop());
        SHOAL_ASSIGN_OR_RETURN(Ref module, Pop());
        if (name->kind != Value::kString || module->kind != Value::kString) return Bad("STACK_GLOBAL of non-strings");
        return Global(module->text, name->text);
      }
      case 'q': { SHOAL_ASSIGN_OR_RETURN(uint64_t k, Uint(1)); return Memo(k); }  // BINPUT
      case 'r': { SHOAL_ASSIGN_OR_RETURN(uint64_t k, Uint(4)); return Memo(k); }  // LONG_BINPUT
      case 0x94: return Memo(memo_.size());                                       // MEMOIZE
      case 'h': { SHOAL_ASSIGN_OR_RETURN(uint64_t k, Uint(1)); return Get(k); }   // BINGET
      case 'j': { SHOAL_ASSIGN_OR_RETURN(uint64_t k, Uint(4)); return Get(k); }   // LONG_BINGET
      case 't': { SHOAL_ASSIGN_OR_RETURN(auto items, PopMark()); return Push(Tuple(std::move(items))); }
      case 0x85: case 0x86: case 0x87: {                                     // TUPLE1..3
        std::vector<Ref> items(op - 0x84);
        for (size_t i = items.size(); i-- > 0;) {
          SHOAL_ASSIGN_OR_RETURN(items[i], Pop());
        }
        return Push(Tuple(std::move(items)));
      }
      case 's': {                                                            // SETITEM
        SHOAL_ASSIGN_OR_RETURN(Ref value, Pop());
        SHOAL_ASSIGN_OR_RETURN(Ref key, Pop());
        return SetItems({key, value});
      }
      case 'u': { SHOAL_ASSIGN_OR_RETURN(auto kv, PopMark()); return SetItems(std::move(kv)); }  // SETITEMS
      case 'a': { SHOAL_ASSIGN_OR_RETURN(Ref v, Pop()); return Appends({v}); }                   // APPEND
      case 'e': { SHOAL_ASSIGN_OR_RETURN(auto items, PopMark()); return Appends(std::move(items)); }  // APPENDS
      case 'Q': return PersistentLoad();                                     // BINPERSID
      case 'R': return Reduce();                                             // REDUCE
      case 'b': return Pop().status();  // BUILD: an OrderedDict's __dict__ (_metadata); not needed
      default: {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "0x%02x", op);
        return Bad(std::string("opcode ") + hex + " is not one a state dict of tensors uses");
      }
    }
  }

  std::string_view b_;
  std::string what_;
  size_t pos_ = 0;
  std::vector<Ref> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, Ref> memo_;
};

// A tensor's values as float32, from its storage entry.
Result<TorchTensor> TensorValues(const Value& t, const std::map<std::string, std::string_view>& entries,
                                 const std::string& prefix, const std::string& name, const std::string& what) {
  TorchTensor out;
  out.shape = t.shape;
  size_t n = 1;
  for (int64_t d : t.shape) {
    if (d < 0 || d > (int64_t{1} << 32)) return InvalidInput(what + ": tensor " + name + " has a bad shape");
    n *= static_cast<size_t>(d);
  }
  // Contiguous (row-major) strides only.
  int64_t want = 1;
  for (size_t i = t.shape.size(); i-- > 0;) {
    if (t.shape[i] > 1 && (i >= t.stride.size() || t.stride[i] != want)) {
      return InvalidInput(what + ": tensor " + name + " is not contiguous");
    }
    want *= t.shape[i];
  }
  const std::string& dtype = t.storage->dtype;
  const size_t width = dtype == "Float" ? 4 : 2;
  if (dtype != "Float" && dtype != "Half" && dtype != "BFloat16") {
    return InvalidInput(what + ": tensor " + name + " is " + dtype + "; float32, float16 or bfloat16 only");
  }
  auto it = entries.find(prefix + "data/" + t.storage->text);
  if (it == entries.end()) return InvalidInput(what + ": storage " + t.storage->text + " of " + name + " is missing");
  const std::string_view data = it->second;
  if (t.number < 0 || (static_cast<size_t>(t.number) + n) * width > data.size()) {
    return InvalidInput(what + ": tensor " + name + " runs past its storage");
  }
  out.values.resize(n);
  const char* src = data.data() + static_cast<size_t>(t.number) * width;
  if (width == 4) {
    std::memcpy(out.values.data(), src, n * 4);
  } else {
    std::vector<uint16_t> halves(n);
    std::memcpy(halves.data(), src, n * 2);
    dtype == "Half" ? cpu::F16ToF32(halves.data(), out.values.data(), n)
                    : cpu::Bf16ToF32(halves.data(), out.values.data(), n);
  }
  return out;
}

}  // namespace

Result<std::map<std::string, TorchTensor>> ParseTorchStateDict(std::string_view bytes, const std::string& what) {
  SHOAL_ASSIGN_OR_RETURN(const auto entries, ZipEntries(bytes, what));
  std::string prefix;
  std::string_view pickle;
  for (const auto& [name, data] : entries) {
    if (name == "data.pkl" || name.ends_with("/data.pkl")) {
      prefix = name.substr(0, name.size() - std::strlen("data.pkl"));
      pickle = data;
    }
  }
  if (pickle.empty()) return InvalidInput(what + ": no data.pkl (not a torch.save file)");
  SHOAL_ASSIGN_OR_RETURN(Ref root, Unpickler(pickle, what).Run());
  if (root->kind != Value::kDict) return InvalidInput(what + ": not a state dict");
  std::map<std::string, TorchTensor> out;
  for (size_t i = 0; i + 1 < root->items.size(); i += 2) {
    const Value& key = *root->items[i];
    const Value& value = *root->items[i + 1];
    if (key.kind != Value::kString || value.kind != Value::kTensor) {
      return InvalidInput(what + ": a state dict entry that is not a named tensor");
    }
    SHOAL_ASSIGN_OR_RETURN(out[key.text], TensorValues(value, entries, prefix, key.text, what));
  }
  return out;
}

Result<std::map<std::string, TorchTensor>> ReadTorchStateDict(const std::string& path) {
  SHOAL_ASSIGN_OR_RETURN(const std::string bytes, ReadFile(path));
  return ParseTorchStateDict(bytes, path);
}

}  // namespace shoal::native
